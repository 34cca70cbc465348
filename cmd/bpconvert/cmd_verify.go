package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
)

func cmdVerify(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("verify", flag.ContinueOnError)
	pos, err := e.parse(fset, args, 1, "DIR|SHARD")
	if err != nil {
		return nil, err
	}
	rep, err := packcore.Verify(ctx, pos[0])
	if err != nil {
		return nil, &inputError{err: fmt.Errorf("verify: %w", err)}
	}
	out := e.stdout
	if e.json {
		out = e.stderr // stdout carries only the JSON document
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(out, "FAIL %s\n", p)
	}
	word := "OK"
	if !rep.OK() {
		word = "FAILED"
	}
	fmt.Fprintf(out, "%s: %s blobs, %s bytes, %d shards, %d problems\n", word, plan.Thousands(int64(rep.Members)), plan.Thousands(rep.Bytes), rep.Shards, len(rep.Problems))
	if !rep.OK() {
		return rep, fmt.Errorf("verify: %s: %d problem(s)", pos[0], len(rep.Problems))
	}
	return rep, nil
}

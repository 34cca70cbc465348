package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

type unpackResult struct {
	Dst     string `json:"dst"`
	Members int    `json:"members"`
	Bytes   int64  `json:"bytes"`
}

func cmdUnpack(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("unpack", flag.ContinueOnError)
	pos, err := e.parse(fset, args, 2, "DIR DST")
	if err != nil {
		return nil, err
	}
	set, err := packcore.OpenSet(pos[0], packcore.SetOptions{RefBase: "."})
	if err != nil {
		return nil, &inputError{err: fmt.Errorf("unpack: %w", err)}
	}
	defer set.Close()
	// Check every key before writing anything: each must be a safe relative
	// path, and no key may be a directory of another.
	keys := map[string]bool{}
	var members []packcore.Member
	for m := range set.Members() {
		if err := packcore.ValidateKey(m.Key); err != nil {
			return nil, &inputError{err: fmt.Errorf("unpack: refusing to extract unsafe member: %w", err)}
		}
		keys[m.Key] = true
		members = append(members, m)
	}
	for _, m := range members {
		for d := filepath.Dir(m.Key); d != "."; d = filepath.Dir(d) {
			if keys[filepath.ToSlash(d)] {
				return nil, &inputError{err: fmt.Errorf("unpack: member %q collides with member %q, which would have to be a directory", d, m.Key)}
			}
		}
	}
	absDst, _ := filepath.Abs(pos[1])
	st, err := stage.Begin(absDst)
	if err != nil {
		return nil, err
	}
	defer st.Abort()
	prog := e.newProgress("unpack")
	var total int64
	for _, m := range members {
		total += m.Size
	}
	prog.SetTotal(int64(len(members)), total)
	for _, m := range members {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		target := filepath.Join(st.Dir, filepath.FromSlash(m.Key))
		if !strings.HasPrefix(target, st.Dir+string(filepath.Separator)) {
			return nil, &inputError{err: fmt.Errorf("unpack: member escapes destination: %q", m.Key)}
		}
		if err := extract(set, m, target); err != nil {
			return nil, fmt.Errorf("unpack: %s: %w", m.Key, err)
		}
		prog.Add(1, m.Size)
	}
	if err := st.Commit(); err != nil {
		return nil, err
	}
	e.infof("unpacked %s blobs into %s", plan.Thousands(int64(len(members))), pos[1])
	return unpackResult{Dst: absDst, Members: len(members), Bytes: total}, nil
}

func extract(set *packcore.Set, m packcore.Member, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	r, err := set.Open(packcore.FormatRef(m.Key, m.Shard))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/bpconvert/bpconvert/packcore"
	flag "github.com/spf13/pflag"
)

type lsResult struct {
	Members []lsMember `json:"members"`
	// fetched says what an s3:// listing read.
	*fetched
}

type lsMember struct {
	Key   string `json:"key"`
	Shard string `json:"shard"`
	Size  int64  `json:"size"`
	Ref   string `json:"ref"`
}

func cmdLs(e *env, fset *flag.FlagSet) runFunc {
	var refBase string
	fset.StringVar(&refBase, "ref-base", "", "directory `DIR` the references name (default: the pack directory's name)")
	return func(ctx context.Context, pos []string) (any, error) {
		loc, err := openPackLoc(ctx, "ls", pos[0])
		if err != nil {
			return nil, err
		}
		set, err := loc.openSet(ctx, "", packcore.SetOptions{RefBase: refBase})
		if err != nil {
			return nil, err
		}
		defer set.Close()
		res := lsResult{fetched: loc.fetched()}
		for m := range set.Members() {
			if e.json {
				res.Members = append(res.Members, lsMember{m.Key, m.Shard, m.Size, set.Ref(m)})
				continue
			}
			if _, err := fmt.Fprintf(e.stdout, "%d\t%s\t%s\n", m.Size, m.Shard, m.Key); err != nil {
				if errors.Is(err, syscall.EPIPE) {
					return nil, nil // a closed pipe (ls | head) is not an error
				}
				return nil, err
			}
		}
		if e.json {
			return res, nil
		}
		if res.fetched != nil {
			return res.fetched, nil
		}
		return nil, nil
	}
}

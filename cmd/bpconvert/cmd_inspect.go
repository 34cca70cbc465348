package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
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
	fmt.Fprintf(out, "%s: %s blobs, %s bytes, %d shards, %d problems\n", word, thousands(int64(rep.Members)), thousands(rep.Bytes), rep.Shards, len(rep.Problems))
	if !rep.OK() {
		return rep, fmt.Errorf("verify: %s: %d problem(s)", pos[0], len(rep.Problems))
	}
	return rep, nil
}

type lsResult struct {
	Members []lsMember `json:"members"`
}

type lsMember struct {
	Key   string `json:"key"`
	Shard string `json:"shard"`
	Size  int64  `json:"size"`
	Ref   string `json:"ref"`
}

func cmdLs(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("ls", flag.ContinueOnError)
	var refBase string
	fset.StringVar(&refBase, "ref-base", "", "directory the references name (default: the pack directory's name)")
	pos, err := e.parse(fset, args, 1, "DIR|SHARD")
	if err != nil {
		return nil, err
	}
	set, err := packcore.OpenSet(pos[0], packcore.SetOptions{RefBase: refBase})
	if err != nil {
		return nil, &inputError{err: fmt.Errorf("ls: %w", err)}
	}
	defer set.Close()
	var res lsResult
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
	return nil, nil
}

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
	e.infof("unpacked %s blobs into %s", thousands(int64(len(members))), pos[1])
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

type manifestResult struct {
	Path   string `json:"path"`
	Shards int    `json:"shards"`
}

func cmdManifest(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("manifest", flag.ContinueOnError)
	force := fset.Bool("force", false, "replace an existing pack.manifest.json")
	pos, err := e.parse(fset, args, 1, "DIR")
	if err != nil {
		return nil, err
	}
	dir := pos[0]
	path := filepath.Join(dir, packcore.ManifestName)
	if _, err := os.Stat(path); err == nil && !*force {
		return nil, &usageError{msg: fmt.Sprintf("manifest: %s exists; packs are immutable", path), hint: "use --force to rewrite it"}
	}
	shards, err := packcore.HashShards(ctx, dir)
	if err != nil {
		return nil, &inputError{err: fmt.Errorf("manifest: %w", err)}
	}
	if len(shards) == 0 {
		return nil, usagef("manifest: no *.zip shards under %s", dir)
	}
	if err := packcore.WriteManifest(dir, shards); err != nil {
		return nil, err
	}
	e.infof("wrote %s for %d shard(s)", path, len(shards))
	return manifestResult{Path: path, Shards: len(shards)}, nil
}

type versionResult struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"go_version"`
}

func cmdVersion(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := e.parse(fset, args, 0, ""); err != nil {
		return nil, err
	}
	v := versionResult{Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.GoVersion = bi.GoVersion
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Revision = s.Value
			}
		}
	}
	if !e.json {
		fmt.Fprintf(e.stdout, "bpconvert %s %s %s\n", v.Version, v.Revision, v.GoVersion)
	}
	return v, nil
}

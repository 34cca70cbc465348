package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
	flag "github.com/spf13/pflag"
)

// packFlags are the pack writer options every command that writes packs takes.
type packFlags struct {
	maxPackBytes byteSize
	maxMembers   int
	refBase      string
	noManifest   bool
	// append and allowRemoved are --append and --allow-removed.
	append, allowRemoved bool
}

func (p *packFlags) register(fs *flag.FlagSet) {
	registerPackLimits(fs, &p.maxPackBytes, &p.maxMembers, &p.noManifest, packcore.DefaultMaxMembers)
	fs.BoolVar(&p.append, "append", false, "pack only the files that DST's committed pack does not hold yet, into new shards, and commit\nthem as a new version of it (an absent DST is packed whole, with a run record); a changed file is refused")
	fs.BoolVar(&p.allowRemoved, "allow-removed", false, "with --append: keep the members of files the pack holds that are gone from SRC now")
	fs.StringVar(&p.refBase, "ref-base", "", "shard directory `DIR` as references name it, relative to the dataset root (default: the pack directory's name)")
}

// registerPackLimits registers the pack settings every command that writes
// packs takes; members is the --max-members default (pack: the most a shard
// can hold; converters: convert.DefaultMaxMembers, which keeps a per-reference
// fsspec read fast).
func registerPackLimits(fs *flag.FlagSet, maxBytes *byteSize, maxMembers *int, noManifest *bool, members int) {
	*maxBytes = packcore.DefaultMaxPackBytes
	fs.Var(maxBytes, "max-pack-bytes", "largest shard size on disk, e.g. 4GiB, 512MiB (default 4GiB)")
	*maxMembers = members
	fs.Var((*memberLimit)(maxMembers), "max-members", fmt.Sprintf("most members in one shard, 1 to %d (default %d)", packcore.DefaultMaxMembers, members))
	fs.BoolVar(noManifest, "no-manifest", false, "do not write pack.manifest.json")
}

// memberLimit is the --max-members flag: checked when parsed, so a value
// no shard can honour is a usage error naming the flag (exit 2) before any
// work.
type memberLimit int

func (m *memberLimit) String() string { return strconv.Itoa(int(*m)) }

// Type is the placeholder help shows for the member limit.
func (m *memberLimit) Type() string { return "N" }

func (m *memberLimit) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > packcore.DefaultMaxMembers {
		return fmt.Errorf("want a whole number from 1 to %d (a zip shard every reader can list holds at most %d members)", packcore.DefaultMaxMembers, packcore.DefaultMaxMembers)
	}
	*m = memberLimit(n)
	return nil
}

func (p *packFlags) options() packcore.WriterOptions {
	return packcore.WriterOptions{
		MaxPackBytes: int64(p.maxPackBytes),
		MaxMembers:   p.maxMembers,
		RefBase:      p.refBase,
		NoManifest:   p.noManifest,
	}
}

// packResult is the summary of pack.
type packResult struct {
	Src         string               `json:"src"`
	Dst         string               `json:"dst"`
	Members     int64                `json:"members"`
	Bytes       int64                `json:"bytes"`
	Shards      int                  `json:"shards"`
	GroupsSplit int                  `json:"groups_split"`
	ShardFiles  []packcore.ShardInfo `json:"shard_files"`
	// Upload describes the uploads of a pack written to object storage.
	Upload *plan.Upload `json:"upload,omitempty"`
	// Appended says what a pack --append added to a committed pack.
	Appended *plan.Appended `json:"appended,omitempty"`
}

func cmdPack(e *env, fset *flag.FlagSet) runFunc {
	var pf packFlags
	pf.register(fset)
	staging := fset.String("staging", "", "local directory `DIR` that stages the shards of a pack written to s3:// before each is uploaded (default: the system's temporary directory)")
	return func(ctx context.Context, pos []string) (any, error) {
		src, dst := pos[0], pos[1]
		d, err := convert.ParseDest(dst, *staging)
		var ue *convert.UsageError
		if errors.As(err, &ue) {
			return nil, usagef("pack: --staging is for destinations in object storage (s3://)")
		}
		if err != nil {
			return nil, err
		}
		if err := checkDestParent("pack", d, dst); err != nil {
			return nil, err
		}
		if pf.allowRemoved && !pf.append {
			return nil, usagef("pack: --allow-removed goes with --append")
		}
		recorded := d.Remote() || pf.append
		ps, err := openPackSource(ctx, src, recorded)
		if err != nil {
			return nil, err
		}
		if recorded || ps.tree.Remote() {
			return packRemote(ctx, e, fset, &pf, ps, d, dst)
		}
		absDst := d.Location()
		if err := stage.CheckDisjoint(src, absDst); err != nil {
			return nil, fmt.Errorf("pack: %w", err)
		}
		// Two walks of the tree: the first checks every key and counts, so
		// nothing is written for a tree that cannot be packed and progress has
		// its totals; the second packs. No list of the files is kept (200,000
		// paths would be most of the run's memory).
		if err := ps.countFiles(ctx); err != nil {
			return nil, err
		}
		st, err := stage.Begin(absDst)
		if err != nil {
			return nil, err
		}
		defer st.Abort()
		opts := pf.options()
		opts.NoLock = true // the staging directory is locked by st
		if opts.RefBase == "" {
			opts.RefBase = filepath.Base(absDst)
		}
		prog := e.newProgress("pack")
		opts.OnShard = func(s packcore.ShardInfo) {
			prog.Milestone(fmt.Sprintf("wrote %s (%s members, %s)", s.Name, plan.Thousands(int64(s.Members)), plan.HumanBytes(s.Bytes)))
		}
		w, err := packcore.Create(ctx, st.Dir, opts)
		if err != nil {
			return nil, err
		}
		defer w.Abort()
		prog.SetTotal(ps.count, ps.total)
		err = ps.walk(ctx, func(it packItem) error {
			if _, err := w.AddFile(it.key, it.path, ""); err != nil {
				return fmt.Errorf("pack: %s: %w", it.path, err)
			}
			prog.Add(1, it.size)
			return nil
		})
		if err != nil {
			return nil, err
		}
		stats, err := w.Close()
		if err != nil {
			return nil, err
		}
		if err := st.Commit(); err != nil {
			return nil, err
		}
		absSrc := ps.tree.Location()
		e.infof("packed %s (%s bytes) into %s under %s", plan.CountText(stats.Members, "blobs"), plan.Thousands(stats.Bytes), plan.CountText(int64(stats.Shards), "shards"), dst)
		return packResult{Src: absSrc, Dst: absDst, Members: stats.Members, Bytes: stats.Bytes, Shards: stats.Shards,
			GroupsSplit: stats.GroupsSplit, ShardFiles: stats.ShardFiles}, nil
	}
}

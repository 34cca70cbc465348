package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/dsverify"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	flag "github.com/spf13/pflag"
)

func cmdVerify(e *env, fset *flag.FlagSet) runFunc {
	against := fset.String("against", "", "also re-read the source at `SRC` and compare every payload with its member, byte for byte: WebDataset shards,\n"+
		"a parquet or Hugging Face dataset, a Lance or LeRobot dataset (as the converters wrote them), the parquet\n"+
		"or Lance source of a dataset that blobpack 0.2.0 converted, or the directory or tars that packs alone were\n"+
		"made from (by pack, or by blobpack 0.2.0's pack and convert-wds: keys are file paths or member names)")
	return func(ctx context.Context, pos []string) (any, error) {
		opts := dsverify.Options{Against: *against, Comparers: formats.Comparers(), Stats: &objstore.Stats{}}
		rep, err := dsverify.Verify(ctx, pos[0], opts)
		// A verify that read object storage (the dataset, or the source
		// compared with) made requests there.
		remote := opts.Stats.Requests() > 0
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			if errors.Is(err, dsverify.ErrTableNotDataset) {
				return nil, usagef("verify: %v", err)
			}
			if remote && !errors.Is(err, dsverify.ErrNothingToVerify) {
				return nil, storeError("verify", err)
			}
			return nil, &inputError{err: fmt.Errorf("verify: %w", err)}
		}
		var res any = rep
		if remote {
			res = verifyResult{rep, &fetched{BytesFetched: opts.Stats.BytesRead(), Requests: opts.Stats.Requests()}}
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
		parts := []string{
			plan.CountText(int64(rep.Members), "blobs"),
			plan.CountText(rep.Bytes, "bytes"),
			plan.CountText(int64(rep.Shards), "shards"),
		}
		if len(rep.Tables) > 0 {
			parts = append(parts, plan.CountText(int64(len(rep.Tables)), "tables"), plan.CountText(rep.Refs, "references"))
		}
		parts = append(parts, plan.CountText(int64(len(rep.Problems)), "problems"))
		fmt.Fprintf(out, "%s: %s\n", word, strings.Join(parts, ", "))
		if len(rep.RefBases) > 0 {
			fmt.Fprintf(out, "references name the dataset root as %s (--ref-base); resolved against %s\n", strings.Join(rep.RefBases, ", "), pos[0])
		}
		if a := rep.Against; a != nil {
			inline := ""
			if a.Inline > 0 {
				inline = fmt.Sprintf(" (%s inline, compared with the table's text)", plan.Thousands(a.Inline))
			}
			if a.KeptURIs > 0 {
				inline += fmt.Sprintf(" (%s kept as their URI, compared with the source's)", plan.Thousands(a.KeptURIs))
			}
			if a.FetchedURIs > 0 {
				inline += fmt.Sprintf(" (%s fetched from their URL when converted: read back, not fetched again)", plan.Thousands(a.FetchedURIs))
			}
			fmt.Fprintf(out, "against %s (%s): %s compared%s, %s (%s), %s\n", a.Source, a.Format,
				plan.CountText(a.Payloads, "payloads"), inline, plan.CountText(a.Bytes, "bytes"), plan.HumanBytes(a.Bytes),
				mismatches(a.Mismatches))
			for _, n := range a.Notes {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			if a.NotCompared > 0 {
				fmt.Fprintf(out, "not compared: %s cut from camera files into one container per episode (packets copied, not the file's bytes)\n",
					plan.CountText(a.NotCompared, "episode containers"))
			}
		}
		if !rep.OK() {
			return res, fmt.Errorf("verify: %s: %s", pos[0], plan.CountText(int64(len(rep.Problems)), "problems"))
		}
		return res, nil
	}
}

// verifyResult is the summary of a verify that read object storage.
type verifyResult struct {
	*dsverify.Report
	*fetched
}

// mismatches counts mismatches in words ("1 mismatch", "2 mismatches").
func mismatches(n int64) string {
	if n == 1 {
		return "1 mismatch"
	}
	return plan.Thousands(n) + " mismatches"
}

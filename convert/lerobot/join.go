package lerobot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/convert/parquet"
)

// Joiner names the convert.TableJoiner of each file that the parts of a
// split LeRobot conversion write: the video index and the frames table,
// merged; the parquet
// tables, each written by one part, with references renumbered; nil for
// the other files (meta/ and the rest, written by part 1 only).
func Joiner(rel string) convert.TableJoiner {
	switch {
	case rel == videoindex.FileName:
		return JoinIndex
	case rel == FramesFile:
		return JoinFrames
	case strings.HasSuffix(rel, ".parquet"):
		return parquet.JoinTable
	}
	return nil
}

var _ convert.TableJoiner = JoinIndex

// JoinIndex merges the parts' video indexes into out: every entry, its
// reference renumbered by rename, sorted as one run sorts them. The parts'
// sources must agree.
func JoinIndex(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) error {
	var src *videoindex.Source
	var entries []videoindex.Entry
	for i, p := range parts {
		if p == "" {
			continue
		}
		ix, err := videoindex.ReadFile(p)
		if err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
		if src == nil {
			src = &ix.Source
		} else if src.CodebaseVersion != ix.Source.CodebaseVersion || src.FPS != ix.Source.FPS || !slices.Equal(src.VideoKeys, ix.Source.VideoKeys) {
			return fmt.Errorf("part %d describes another source (%+v, part 1 %+v)", i+1, ix.Source, *src)
		}
		for _, e := range ix.Episodes {
			if e.Ref, err = rename(i, e.Ref); err != nil {
				return fmt.Errorf("part %d: episode %d, %s: %w", i+1, e.EpisodeIndex, e.VideoKey, err)
			}
			entries = append(entries, e)
		}
	}
	if src == nil {
		return fmt.Errorf("no part has a video index")
	}
	ix := videoindex.New(*src, entries)
	if err := ix.Validate(); err != nil {
		return err
	}
	return videoindex.WriteFile(out, ix)
}

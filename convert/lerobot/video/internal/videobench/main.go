//go:build cgo

// Command videobench drives packages video and video/libav for
// bench/lerobot_video.sh until the convert-lerobot command exists. It is a
// measuring tool, not a converter: it reads no LeRobot metadata.
//
//	videobench scan FILE...
//	    scan each file's packets, print its keyframe count
//	videobench split -fps F -times T0,T1,...,Tn OUTDIR FILE...
//	    episodes [Ti, Ti+1) seconds (each of round((Ti+1-Ti)*F) frames) of
//	    every FILE, checked and cut into OUTDIR/<file name>/episode_N.mp4
//
// Exit status: 0 ok, 1 failure, 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/convert/lerobot/video/libav"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

var errUsage = errors.New("usage: videobench scan FILES | videobench split -fps F -times T0,T1,...,Tn OUTDIR FILES")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := errUsage
	if len(args) > 0 {
		switch args[0] {
		case "scan":
			err = scan(ctx, args[1:], stdout)
		case "split":
			err = split(ctx, args[1:], stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "videobench:", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

func scan(ctx context.Context, files []string, stdout io.Writer) error {
	if len(files) == 0 {
		return errUsage
	}
	for _, f := range files {
		s, err := libav.ScanKeyframes(ctx, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s, %d packets, %d keyframes, reordered %v\n", f, s.Codec, s.Frames(), len(s.Keyframes()), s.Reordered)
	}
	return nil
}

func split(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("split", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fps := fs.Float64("fps", 0, "frame rate")
	times := fs.String("times", "", "episode boundaries in seconds, comma separated")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 || *fps <= 0 {
		return errUsage
	}
	var ts []float64
	for _, f := range strings.Split(*times, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return fmt.Errorf("%w: bad time %q", errUsage, f)
		}
		ts = append(ts, v)
	}
	if len(ts) < 2 {
		return errUsage
	}
	var eps []video.Episode
	for i := 0; i+1 < len(ts); i++ {
		eps = append(eps, video.Episode{Index: i, FromNS: video.SecondsToNS(ts[i]), ToNS: video.SecondsToNS(ts[i+1]),
			Frames: int64(math.Round((ts[i+1] - ts[i]) * *fps))})
	}
	outDir := fs.Arg(0)
	for _, f := range fs.Args()[1:] {
		s, err := libav.ScanKeyframes(ctx, f)
		if err != nil {
			return err
		}
		rep, err := video.CheckBoundaries(s, "video", f, eps, video.Options{FPS: *fps})
		if err != nil {
			return err
		}
		if d := rep.Decide(); !d.Split {
			return fmt.Errorf("%s: not splittable: %s", f, strings.Join(d.Reasons, "; "))
		}
		dir := filepath.Join(outDir, filepath.Base(f))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		outs, err := libav.Split(ctx, rep, video.DirDest(dir))
		if err != nil {
			return err
		}
		var bytes int64
		for _, o := range outs {
			bytes += o.Bytes
		}
		fmt.Fprintf(stdout, "%s: %d episodes, %d bytes\n", f, len(outs), bytes)
	}
	return nil
}

// Command readbench times random whole-member reads from a pack through the
// Go API, for bench/read.sh: readbench DIR N reads N members picked at
// random (a fixed seed) with Set.Read, then the same members with
// Set.ReadInto and one reused buffer, and prints one line per path:
// the path's name, the seconds it took, and the allocations per read.
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/bpconvert/bpconvert/packcore"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "readbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: readbench DIR N")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		return fmt.Errorf("the number of reads must be positive, not %q", args[1])
	}
	set, err := packcore.OpenSet(args[0], packcore.SetOptions{})
	if err != nil {
		return err
	}
	defer set.Close()
	var keys []string
	for m := range set.Members() {
		keys = append(keys, m.Key)
	}
	slices.Sort(keys)
	rng := rand.New(rand.NewPCG(1, 2))
	picks := make([]string, n)
	for i := range picks {
		picks[i] = keys[rng.IntN(len(keys))]
	}
	paths := []struct {
		name string
		read func(key string, buf []byte) ([]byte, error)
	}{
		{"Read", func(key string, _ []byte) ([]byte, error) { return set.Read(key) }},
		{"ReadInto", set.ReadInto},
	}
	for _, p := range paths {
		var buf []byte
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for _, k := range picks {
			b, err := p.read(k, buf)
			if err != nil {
				return err
			}
			buf = b[:0]
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		fmt.Printf("%s %.4f %.2f\n", p.name, elapsed.Seconds(), float64(after.Mallocs-before.Mallocs)/float64(n))
	}
	return nil
}

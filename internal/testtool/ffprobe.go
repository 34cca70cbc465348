package testtool

import (
	"bufio"
	"bytes"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Packet is one video packet as ffprobe reports it.
type Packet struct {
	PTS, DTS, Duration int64
	Size               int
	Flags, Hash        string
}

// FFprobePackets lists the first video stream's packets of path in decode
// order with a SHA-256 of each packet's data, as ffprobe (not bpconvert)
// reads them.
func FFprobePackets(t testing.TB, path string) []Packet {
	t.Helper()
	out := Run(t, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_data_hash", "sha256",
		"-show_entries", "packet=pts,dts,duration,size,flags,data_hash", "-of", "csv=p=0", path)
	var pks []Packet
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) != 6 {
			t.Fatalf("ffprobe %s: unexpected line %q", path, sc.Text())
		}
		var p Packet
		var err error
		for i, dst := range []*int64{&p.PTS, &p.DTS, &p.Duration} {
			if *dst, err = strconv.ParseInt(f[i], 10, 64); err != nil {
				t.Fatalf("ffprobe %s: field %d of %q: %v", path, i, sc.Text(), err)
			}
		}
		if p.Size, err = strconv.Atoi(f[3]); err != nil {
			t.Fatalf("ffprobe %s: size in %q: %v", path, sc.Text(), err)
		}
		p.Flags, p.Hash = f[4], f[5]
		pks = append(pks, p)
	}
	return pks
}

// FFmpegDecodes runs path through the ffmpeg CLI's decoder and fails t
// (without stopping it) when ffmpeg fails or reports any error.
func FFmpegDecodes(t testing.TB, path string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("ffmpeg decode of %s: %v\n%s", path, err, stderr.String())
	}
}

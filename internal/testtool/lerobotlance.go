package testtool

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LeRobotLance writes dst, the Lance-stored twin of the LeRobot v3.0
// dataset src (parquet tables and mp4 files), with fixtures/lance14/lerobot.py
// (pylance 14.0.3 of the pinned Python environment, and ffprobe) in the
// layout LeRobot's Lance storage backend reads; args are the generator's
// options (--blob-thresholds, --break). It skips t without the environment
// or ffprobe, or fails it under BPCONVERT_REQUIRE_TOOLS=1.
func LeRobotLance(t testing.TB, src, dst string, args ...string) {
	t.Helper()
	py := Python(t)
	Require(t, "ffprobe")
	cmd := exec.Command(py, append([]string{filepath.Join(RepoRoot(t), "fixtures", "lance14", "lerobot.py"), src, dst}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lerobot.py %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
}

package testtool

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// tmpfsMagic is the statfs f_type of a tmpfs mount.
const tmpfsMagic = 0x01021994

// ramRoom returns the bytes free on dir when it is a tmpfs, 0 otherwise.
func ramRoom(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || int64(st.Type) != tmpfsMagic {
		return 0
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// memAvailable returns the kernel's estimate of the memory available for
// new allocations (MemAvailable in /proc/meminfo), 0 when unknown.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemAvailable" {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kib << 10
	}
	return 0
}

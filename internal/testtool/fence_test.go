package testtool

import (
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
)

// module is the module path, the prefix of every package of bpconvert.
const module = "github.com/bpconvert/bpconvert/"

// libavPkg is the one package allowed to import go-astiav (and so cgo).
const libavPkg = module + "convert/lerobot/video/libav"

// astiav is the prefix of the libav binding's import paths.
const astiav = "github.com/asticode/"

// goList runs go list in the repository root with cgo on (so that cgo
// files, and the imports only they make, are listed whatever the caller's
// CGO_ENABLED) and returns its output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"list"}, args...)...)
	cmd.Dir = RepoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestDependencyFence keeps heavy dependencies out of the core packages:
// they must build and test on a machine without libav, arrow or a terminal
// UI (STYLE.md, "Shape of the code").
func TestDependencyFence(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"github.com/apache/arrow-go/",
		"github.com/charmbracelet/",
		"github.com/schollz/progressbar/",
		astiav,
	}
	core := []string{"packcore", "plan", "sniff", "detect", "stage", "progress", "convert/lerobot/video", "convert/lerobot/videoindex"}
	for _, pkg := range core {
		for _, line := range goList(t, "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", "./"+pkg) {
			path, cgoFiles, _ := strings.Cut(line, " ")
			for _, f := range forbidden {
				if strings.HasPrefix(path, f) {
					t.Errorf("%s depends on %s", pkg, path)
				}
			}
			first, _, _ := strings.Cut(path, "/")
			if cgoFiles != "0" && strings.Contains(first, ".") {
				t.Errorf("%s depends on %s, which uses cgo", pkg, path)
			}
		}
	}
}

// TestLibavFence keeps libav behind video.Engine: only the libav package
// imports go-astiav; convert/lerobot (which reads tables with arrow, and so
// is not in the core list) and the plain bpconvert program build without it
// or any other cgo package outside the standard library; and only
// bpconvert-lerobot (cmd/bpconvert with the lerobot tag) links libav.
func TestLibavFence(t *testing.T) {
	t.Parallel()
	for _, tags := range []string{"", "lerobot"} {
		lines := goList(t, "-e", "-tags", tags, "-f",
			"{{.ImportPath}}|{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
		for _, line := range lines {
			pkg, imports, _ := strings.Cut(line, "|")
			for _, imp := range strings.Fields(imports) {
				if strings.HasPrefix(imp, astiav) && pkg != libavPkg {
					t.Errorf("%s imports %s (tags %q); only %s may", pkg, imp, tags, libavPkg)
				}
			}
		}
	}

	for _, c := range []struct {
		pkg, tags string
		libav     bool // whether it must link the libav package
	}{
		{pkg: "convert/lerobot"},
		{pkg: "convert/lerobot/video"},
		{pkg: "cmd/bpconvert"},
		{pkg: "cmd/bpconvert", tags: "lerobot", libav: true},
	} {
		linked := false
		for _, line := range goList(t, "-deps", "-tags", c.tags, "-f", "{{.ImportPath}} {{len .CgoFiles}} {{.Standard}}", "./"+c.pkg) {
			f := strings.Fields(line)
			path, cgoFiles, std := f[0], f[1], f[2] == "true"
			if path == libavPkg {
				linked = true
			}
			if c.libav {
				continue
			}
			if strings.HasPrefix(path, astiav) || path == libavPkg {
				t.Errorf("%s (tags %q) depends on %s", c.pkg, c.tags, path)
			} else if cgoFiles != "0" && !std {
				t.Errorf("%s (tags %q) depends on %s, which uses cgo", c.pkg, c.tags, path)
			}
		}
		if c.libav && !linked {
			t.Errorf("%s (tags %q) does not link %s: convert-lerobot would have no video engine", c.pkg, c.tags, libavPkg)
		}
	}
}

// TestInternalLayer keeps internal/ at the bottom: its packages (and their
// tests) import the standard library, outside modules and one another, never
// a package of a higher layer (packcore, objstore, convert/...). A helper
// that needs a higher layer lives beside what it serves.
func TestInternalLayer(t *testing.T) {
	t.Parallel()
	lines := goList(t, "-e", "-f",
		"{{.ImportPath}}|{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./internal/...")
	for _, line := range lines {
		pkg, imports, _ := strings.Cut(line, "|")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, module+"internal/") {
				t.Errorf("%s imports %s, a higher layer", pkg, imp)
			}
		}
	}
}

// TestComparerFence keeps verify --against independent of the converters
// (docs/architecture.md, "The verify principle"): each converter's
// comparison, convert/X/Xverify, reads the source format on its own, so
// neither it nor anything it depends on is a converter package (convert/X,
// another convert/Y, the convert core), and neither is dsverify. Other
// comparisons may be (LeRobot's compares its frames as Parquet's does). The
// one exception is the video index convert-lerobot writes
// (convert/lerobot/videoindex), which LeRobot's comparison reads to know
// which member holds which camera file. Tests are not fenced: they may
// hold the comparison's reading of a format to the converter's (wdsverify's
// does, with convert/wds).
func TestComparerFence(t *testing.T) {
	t.Parallel()
	const videoIndex = module + "convert/lerobot/videoindex"
	isComparer := func(pkg string) bool {
		return strings.HasPrefix(pkg, module+"convert/") && path.Base(pkg) == path.Base(path.Dir(pkg))+"verify"
	}
	var fenced []string
	for _, pkg := range goList(t, "-f", "{{.ImportPath}}", "./convert/...") {
		if isComparer(pkg) {
			fenced = append(fenced, pkg)
		}
	}
	if len(fenced) < 4 {
		t.Fatalf("found the comparisons %q; want one per converter (convert/X/Xverify)", fenced)
	}
	for _, pkg := range append(fenced, module+"dsverify") {
		for _, dep := range goList(t, "-deps", "-f", "{{.ImportPath}}", pkg) {
			if (dep == module+"convert" || strings.HasPrefix(dep, module+"convert/")) && !isComparer(dep) && dep != videoIndex {
				t.Errorf("%s depends on %s, a converter package: verify reads the source independently of the converter", pkg, dep)
			}
		}
	}
}

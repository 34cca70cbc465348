// Package detect tells which kind of dataset a local path holds, from the
// names of its files (a WebDataset's tars, parquet files, a Lance table's
// _versions, a LeRobot dataset's meta/info.json, a bpconvert output's run
// record), so that a command given the wrong kind of input can name the
// command that reads it. It reads directory listings and one small file at
// most, never a payload.
//
// It is not a validator: a path it names a kind for may still be refused by
// that kind's converter, and an unknown path may still convert.
package detect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Kind is a kind of dataset.
type Kind int

// The kinds Path tells apart.
const (
	Unknown    Kind = iota
	Missing         // nothing at the path
	WebDataset      // tar shards
	Parquet         // parquet files: Hugging Face datasets and plain tables
	HFDisk          // a Hugging Face save_to_disk directory (arrow files)
	Lance           // a Lance table
	LeRobot         // a LeRobot dataset (meta/info.json)
	Output          // a bpconvert output (a run record)
)

// String names the kind for messages.
func (k Kind) String() string {
	switch k {
	case Missing:
		return "nothing"
	case WebDataset:
		return "a WebDataset (tar shards)"
	case Parquet:
		return "a Parquet or Hugging Face dataset"
	case HFDisk:
		return "a Hugging Face dataset saved with save_to_disk"
	case Lance:
		return "a Lance table"
	case LeRobot:
		return "a LeRobot dataset"
	case Output:
		return "a dataset bpconvert wrote"
	}
	return "an unknown kind of input"
}

// Command is the bpconvert command that reads the kind ("" for Unknown,
// Missing and Output).
func (k Kind) Command() string {
	switch k {
	case WebDataset:
		return "convert-wds"
	case Parquet, HFDisk:
		return "convert-parquet"
	case Lance:
		return "convert-lance"
	case LeRobot:
		return "convert-lerobot"
	}
	return ""
}

// RecordName is the run record every bpconvert output holds at its root.
const RecordName = ".bpconvert.json"

// Path tells the kind of dataset at the local path p.
func Path(p string) Kind {
	fi, err := os.Stat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return Missing
		}
		return Unknown
	}
	if !fi.IsDir() {
		return fileKind(p)
	}
	if exists(filepath.Join(p, RecordName)) {
		return Output
	}
	if isDir(filepath.Join(p, "_versions")) {
		return Lance
	}
	if lerobot(filepath.Join(p, "meta", "info.json")) {
		return LeRobot
	}
	if exists(filepath.Join(p, "dataset_info.json")) && exists(filepath.Join(p, "state.json")) {
		return HFDisk
	}
	return treeKind(p)
}

// fileKind tells the kind of a single file by its name.
func fileKind(p string) Kind {
	name := strings.ToLower(filepath.Base(p))
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar.zst"} {
		if strings.HasSuffix(name, ext) {
			return WebDataset
		}
	}
	if strings.HasSuffix(name, ".parquet") {
		return Parquet
	}
	return Unknown
}

// maxEntries bounds the directory entries treeKind looks at, so a huge
// tree costs no more than a few listings.
const maxEntries = 10000

// treeKind looks for tar or parquet files at most three levels down
// (data/train-00000-of-00001.parquet, default/train/0000.parquet, or
// tars at the top), the first found deciding.
func treeKind(root string) Kind {
	seen := 0
	var walk func(dir string, depth int) Kind
	walk = func(dir string, depth int) Kind {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return Unknown
		}
		var subdirs []string
		for _, e := range ents {
			if seen++; seen > maxEntries {
				return Unknown
			}
			if e.IsDir() {
				if !strings.HasPrefix(e.Name(), ".") {
					subdirs = append(subdirs, filepath.Join(dir, e.Name()))
				}
				continue
			}
			if k := fileKind(e.Name()); k != Unknown {
				return k
			}
		}
		if depth == 0 {
			return Unknown
		}
		for _, d := range subdirs {
			if k := walk(d, depth-1); k != Unknown {
				return k
			}
		}
		return Unknown
	}
	return walk(root, 3)
}

// lerobot reports whether p is a LeRobot info.json (it names a
// codebase_version).
func lerobot(p string) bool {
	// Only a regular file is read: a FIFO or a device would block or
	// never end.
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 1<<20 {
		return false
	}
	var info struct {
		Codebase string `json:"codebase_version"`
	}
	return json.Unmarshal(b, &info) == nil && info.Codebase != ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

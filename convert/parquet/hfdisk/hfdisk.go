// Package hfdisk reads what a Hugging Face save_to_disk directory is made
// of, for convert-parquet: which files are its Arrow data files and which
// dataset (split) each belongs to (Detect), and whether an Arrow IPC file's
// schema is safe to hand to arrow-go (CheckSchema).
//
// Dataset.save_to_disk(dir) writes dir/data-NNNNN-of-NNNNN.arrow (Arrow IPC
// streams whose schema carries the "huggingface" metadata), dir/state.json
// (which lists them under _data_files) and dir/dataset_info.json;
// DatasetDict.save_to_disk(dir) writes dir/dataset_dict.json ({"splits":
// [...]}) and one such directory per split.
//
// It reads nothing itself: Detect is given the directory's file names and a
// way to read its small JSON files, so it serves a local directory and a
// prefix in object storage alike.
package hfdisk

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// The marker files of a save_to_disk directory, and the dataset info
// beside each dataset's data files.
const (
	StateName = "state.json"
	DictName  = "dataset_dict.json"
	InfoName  = "dataset_info.json"
)

// Layout is what a save_to_disk directory holds.
type Layout struct {
	// Dict is true for a DatasetDict; Datasets are the dataset
	// directories relative to the root ("" for a Dataset at the root).
	Dict     bool
	Datasets []string
	// DataFiles are the Arrow data files the state.json files name, in
	// their order, dataset by dataset.
	DataFiles []DataFile
	// Infos are the dataset_info.json files beside the data files.
	Infos map[string]bool

	data map[string]bool // DataFiles by Rel
}

// DataFile is one Arrow data file of a save_to_disk dataset.
type DataFile struct {
	// Rel is its slash-separated path relative to the root; Dataset the
	// directory of its dataset ("" at the root).
	Rel, Dataset string
}

// Has reports whether rel is one of the layout's data files.
func (l *Layout) Has(rel string) bool { return l.data[rel] }

// FileError is a problem with the layout, in the file it names.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Detect recognises a save_to_disk directory by a state.json or a
// dataset_dict.json at the root of files (every file's slash-separated
// path relative to the root) and returns its layout, or nil when neither
// marker is there. read returns the bytes of one of the files. A
// directory holding both markers, a state.json that names a missing file
// or one twice, and a split without its directory are refused with a
// *FileError.
func Detect(files []string, read func(rel string) ([]byte, error)) (*Layout, error) {
	has := map[string]bool{}
	for _, f := range files {
		has[f] = true
	}
	if !has[StateName] && !has[DictName] {
		return nil, nil
	}
	if has[StateName] && has[DictName] {
		return nil, &FileError{DictName, errors.New("the directory holds both state.json (a save_to_disk Dataset) and dataset_dict.json (a DatasetDict); convert one of them")}
	}
	l := &Layout{Dict: has[DictName], Infos: map[string]bool{}}
	dirs := []string{""}
	if l.Dict {
		var err error
		if dirs, err = splits(read); err != nil {
			return nil, err
		}
	}
	taken := map[string]bool{}
	l.data = taken
	for _, dir := range dirs {
		stRel := path.Join(dir, StateName)
		if !has[stRel] {
			return nil, &FileError{DictName, fmt.Errorf("split %q has no %s (a DatasetDict keeps each split in a directory of that name)", dir, stRel)}
		}
		names, err := dataFiles(stRel, read)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			rel := path.Join(dir, name)
			switch {
			case !has[rel]:
				return nil, &FileError{stRel, fmt.Errorf("_data_files names %q, which does not exist", rel)}
			case taken[rel]:
				return nil, &FileError{stRel, fmt.Errorf("_data_files names %q twice", rel)}
			}
			taken[rel] = true
			l.DataFiles = append(l.DataFiles, DataFile{Rel: rel, Dataset: dir})
		}
		if info := path.Join(dir, InfoName); has[info] {
			l.Infos[info] = true
		}
		l.Datasets = append(l.Datasets, dir)
	}
	return l, nil
}

// splits reads the split directories a dataset_dict.json names.
func splits(read func(string) ([]byte, error)) ([]string, error) {
	b, err := read(DictName)
	if err != nil {
		return nil, &FileError{DictName, err}
	}
	var v struct {
		Splits []string `json:"splits"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, &FileError{DictName, fmt.Errorf("not a DatasetDict's dataset_dict.json: %v", err)}
	}
	if len(v.Splits) == 0 {
		return nil, &FileError{DictName, errors.New("lists no splits")}
	}
	var dirs []string
	for _, s := range v.Splits {
		if !PlainName(s) || slices.Contains(dirs, s) {
			return nil, &FileError{DictName, fmt.Errorf("split name %q is not a plain directory name, or repeated", s)}
		}
		dirs = append(dirs, s)
	}
	return dirs, nil
}

// dataFiles reads the data file names a state.json lists.
func dataFiles(stRel string, read func(string) ([]byte, error)) ([]string, error) {
	b, err := read(stRel)
	if err != nil {
		return nil, &FileError{stRel, err}
	}
	var st struct {
		DataFiles []struct {
			Filename string `json:"filename"`
		} `json:"_data_files"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, &FileError{stRel, fmt.Errorf("not a save_to_disk state: %v", err)}
	}
	if len(st.DataFiles) == 0 {
		return nil, &FileError{stRel, errors.New("_data_files names no data file")}
	}
	var names []string
	for _, df := range st.DataFiles {
		if !PlainName(df.Filename) {
			return nil, &FileError{stRel, fmt.Errorf("_data_files names %q, not a file name in the dataset's directory", df.Filename)}
		}
		names = append(names, df.Filename)
	}
	return names, nil
}

// PlainName reports whether s names an entry of a directory: not empty,
// not . or .., without separators.
func PlainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`) && !strings.ContainsRune(s, 0)
}

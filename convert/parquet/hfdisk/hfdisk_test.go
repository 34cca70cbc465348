package hfdisk

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// TestDetect: layouts as datasets' save_to_disk writes them (a Dataset, a
// DatasetDict of two splits) are found, with their data files in the
// state.json order and the dataset_info.json files; refused layouts name
// the file at fault.
func TestDetect(t *testing.T) {
	t.Parallel()
	state := func(names ...string) string {
		var parts []string
		for _, n := range names {
			parts = append(parts, `{"filename": "`+n+`"}`)
		}
		return `{"_data_files": [` + strings.Join(parts, ", ") + `], "_fingerprint": "x"}`
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		want    *Layout
		errFile string
		errText string
	}{
		{name: "no marker", files: map[string]string{"data.arrow": ""}},
		{name: "dataset", files: map[string]string{"state.json": state("data-00001-of-00002.arrow", "data-00000-of-00002.arrow"), "dataset_info.json": "{}",
			"data-00000-of-00002.arrow": "", "data-00001-of-00002.arrow": "", "cache-1.arrow": ""},
			want: &Layout{Datasets: []string{""}, Infos: map[string]bool{"dataset_info.json": true},
				DataFiles: []DataFile{{Rel: "data-00001-of-00002.arrow"}, {Rel: "data-00000-of-00002.arrow"}}}},
		{name: "dataset dict", files: map[string]string{"dataset_dict.json": `{"splits": ["train", "test"]}`,
			"train/state.json": state("data.arrow"), "train/data.arrow": "", "test/state.json": state("data.arrow"), "test/data.arrow": "", "test/dataset_info.json": "{}"},
			want: &Layout{Dict: true, Datasets: []string{"train", "test"}, Infos: map[string]bool{"test/dataset_info.json": true},
				DataFiles: []DataFile{{Rel: "train/data.arrow", Dataset: "train"}, {Rel: "test/data.arrow", Dataset: "test"}}}},
		{name: "both markers", files: map[string]string{"state.json": state("a.arrow"), "dataset_dict.json": `{"splits": ["a"]}`}, errFile: DictName, errText: "both state.json"},
		{name: "missing data file", files: map[string]string{"state.json": state("a.arrow")}, errFile: StateName, errText: `"a.arrow", which does not exist`},
		{name: "data file twice", files: map[string]string{"state.json": state("a.arrow", "a.arrow"), "a.arrow": ""}, errFile: StateName, errText: "twice"},
		{name: "data file outside", files: map[string]string{"state.json": state("../a.arrow")}, errFile: StateName, errText: "not a file name"},
		{name: "no data files", files: map[string]string{"state.json": `{"_data_files": []}`}, errFile: StateName, errText: "names no data file"},
		{name: "not json", files: map[string]string{"state.json": "{"}, errFile: StateName, errText: "not a save_to_disk state"},
		{name: "split without directory", files: map[string]string{"dataset_dict.json": `{"splits": ["train"]}`}, errFile: DictName, errText: `split "train" has no train/state.json`},
		{name: "split name with a slash", files: map[string]string{"dataset_dict.json": `{"splits": ["a/b"]}`}, errFile: DictName, errText: "not a plain directory name"},
		{name: "no splits", files: map[string]string{"dataset_dict.json": `{"splits": []}`}, errFile: DictName, errText: "lists no splits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var names []string
			for n := range tc.files {
				names = append(names, n)
			}
			read := func(rel string) ([]byte, error) {
				b, ok := tc.files[rel]
				if !ok {
					return nil, fs.ErrNotExist
				}
				return []byte(b), nil
			}
			got, err := Detect(names, read)
			if tc.errFile != "" {
				var fe *FileError
				if !errors.As(err, &fe) || fe.File != tc.errFile || !strings.Contains(fe.Error(), tc.errText) {
					t.Fatalf("error %v, want one in %s saying %q", err, tc.errFile, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != nil {
				got.data = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("layout %+v, want %+v", got, tc.want)
			}
		})
	}
}

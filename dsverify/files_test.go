package dsverify

import "testing"

// TestParentName: the directory that holds a single file is named as the
// location named the file, so that messages name what the user typed.
func TestParentName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ loc, file, want string }{
		{"ds/samples.parquet", "samples.parquet", "ds"},
		{"samples.parquet", "samples.parquet", "."},
		{"/samples.parquet", "samples.parquet", "/"},
		{"/data//ds/t.parquet", "t.parquet", "/data//ds"},
		{"s3://bkt/ds/media/pack-0000.zip", "pack-0000.zip", "s3://bkt/ds/media"},
		{"s3://bkt/t.parquet", "t.parquet", "s3://bkt"},
	} {
		if got := parentName(c.loc, c.file); got != c.want {
			t.Errorf("parentName(%q, %q) = %q, want %q", c.loc, c.file, got, c.want)
		}
	}
}

package wds

import (
	"strings"
	"testing"
)

// The expected splits are what webdataset's base_plus_ext and
// group_by_keys give (docs/research: ecosystem.md section 1.1, checked by
// running Python), on names already stripped of "./".
func TestSplitSample(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, key, field string
		ok               bool
	}{
		{"images17/image194.left.jpg", "images17/image194", "left.jpg", true},
		{"sample.0001.jpg", "sample", "0001.jpg", true},
		{"a.b/c.d/000003.jpg", "a.b/c.d/000003", "jpg", true},
		{"dir/x.JPG", "dir/x", "jpg", true},
		{"s/k.tar.gz", "s/k", "tar.gz", true},
		{"000001", "", "", false},
		{"a.b/c", "", "", false},
		{"._000001.jpg", "", "", false},
		{"dir/._000001.jpg", "dir/", "_000001.jpg", true},
		{"__meta__", "", "", false},
		{"__meta__/x.json", "", "", false},
		{"__index__.json", "__index__", "json", true},
		{"x/__meta__/a.txt", "x/__meta__/a", "txt", true},
		{"a.", "a", "", true},
	}
	for _, c := range cases {
		key, field, ok := SplitSample(c.name)
		if key != c.key || field != c.field || ok != c.ok {
			t.Errorf("SplitSample(%q) = %q, %q, %v; want %q, %q, %v", c.name, key, field, ok, c.key, c.field, c.ok)
		}
	}
}

func TestMemberKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, prefix, key, err string
	}{
		{"000001.jpg", "", "000001.jpg", ""},
		{"./000001.jpg", "", "000001.jpg", ""},
		{"././a/b.jpg", "", "a/b.jpg", ""},
		{".//a.jpg", "", "a.jpg", ""},
		{"a/b.jpg", "train-000003", "train-000003/a/b.jpg", ""},
		{"ünï/čöđé.jpg", "", "ünï/čöđé.jpg", ""},
		{"../x.jpg", "", "", "unsafe member name"},
		{"a/../../x.jpg", "", "", "unsafe member name"},
		{"/etc/passwd", "", "", "absolute path"},
		{"a//b.jpg", "", "", "unusable member name"},
		{"a::b.jpg", "", "", "unusable member name"},
		{`a\b.jpg`, "", "", "unusable member name"},
		{"./", "", "", "empty"},
		{"a\x00b", "", "", "unusable member name"},
	}
	for _, c := range cases {
		key, err := memberKey(c.name, c.prefix)
		if c.err == "" {
			if err != nil || key != c.key {
				t.Errorf("memberKey(%q, %q) = %q, %v; want %q", c.name, c.prefix, key, err, c.key)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("memberKey(%q, %q) = %q, %v; want an error saying %q", c.name, c.prefix, key, err, c.err)
		}
	}
}

func TestSymlinkTarget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, target, want string
		ok                 bool
	}{
		{"links/a.txt", "../b/c.txt", "b/c.txt", true},
		{"./sub/sym.txt", "../000001.txt", "000001.txt", true},
		{"s/b.txt", "a.txt", "s/a.txt", true},
		{"s/b.txt", "./a.txt", "s/a.txt", true},
		{"a.txt", "../../etc/passwd", "", false},
		{"a.txt", "/etc/passwd", "", false},
		{"s/a.txt", "..", "", false},
		{"a.txt", ".", "", false},
		{"a.txt", "", "", false},
	}
	for _, c := range cases {
		got, ok := symlinkTarget(c.name, c.target)
		if got != c.want || ok != c.ok {
			t.Errorf("symlinkTarget(%q, %q) = %q, %v; want %q, %v", c.name, c.target, got, ok, c.want, c.ok)
		}
	}
}

func TestShardNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		shard bool
		stem  string
	}{
		{"train-000003.tar", true, "train-000003"},
		{"train-000003.tar.gz", true, "train-000003"},
		{"x.TGZ", true, "x"},
		{"x.tar.zst", true, "x"},
		{"x.tar.xz", true, "x"},
		{"x.tar.bz2", true, "x"},
		{"x.parquet", false, "x"},
		{".tar", false, ".tar"},
		{"data", false, "data"},
	}
	for _, c := range cases {
		if got := IsShardName(c.name); got != c.shard {
			t.Errorf("IsShardName(%q) = %v", c.name, got)
		}
		if got := ShardStem("dir/" + c.name); got != c.stem {
			t.Errorf("ShardStem(%q) = %q, want %q", c.name, got, c.stem)
		}
	}
}

func TestDetectCompression(t *testing.T) {
	t.Parallel()
	cases := []struct {
		magic []byte
		want  string
	}{
		{[]byte{0x1f, 0x8b, 8, 0}, CompressionGzip},
		{[]byte("BZh91AY"), CompressionBzip2},
		{[]byte("BZh0"), CompressionNone},
		{[]byte{0xfd, '7', 'z', 'X', 'Z', 0}, CompressionXz},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd}, CompressionZstd},
		{[]byte{0x5e, 0x2a, 0x4d, 0x18}, CompressionZstd},
		{[]byte("000000.jpg"), CompressionNone},
		{nil, CompressionNone},
	}
	for _, c := range cases {
		if got := detectCompression(c.magic); got != c.want {
			t.Errorf("detectCompression(%q) = %s, want %s", c.magic, got, c.want)
		}
	}
}

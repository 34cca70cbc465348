package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
)

// checkArchiveZip reads every member with Go's archive/zip and compares the
// SHA-256 of those named in want.
func checkArchiveZip(path string, want map[string]string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Flags&0x8 != 0 || f.Method != zip.Store {
			return fmt.Errorf("%s: flags %#x method %d", f.Name, f.Flags, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("archive/zip %s: %w", f.Name, err)
		}
		if w, ok := want[f.Name]; ok && w != hex.EncodeToString(h.Sum(nil)) {
			return fmt.Errorf("archive/zip %s: bytes differ", f.Name)
		}
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

package sniff_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/bpconvert/bpconvert/sniff"
)

func ExampleDetect() {
	k := sniff.Detect([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	fmt.Println(k.Label, k.Ext, k.MIME)
	// Output: PNG .png image/png
}

func ExampleExt() {
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	fmt.Println(sniff.Ext("0001.seg.PNG", jpeg)) // the source name wins
	fmt.Println(sniff.Ext("0001", jpeg))         // no extension: the bytes decide
	fmt.Println(sniff.Ext("0001.a::b", jpeg))    // refused extension: the bytes decide
	// Output:
	// .png
	// .jpg
	// .jpg
}

func ExampleReader() {
	r := sniff.NewReader(strings.NewReader(`{"caption": "a cat"}`))
	k, err := r.Kind()
	if err != nil {
		panic(err)
	}
	var sb strings.Builder
	n, _ := io.Copy(&sb, r) // the sniffed bytes are read again
	fmt.Println(k.Label, n)
	// Output: JSON 20
}

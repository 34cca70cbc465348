// Package sniff identifies payloads (images, audio, video, arrays, documents, text) from
// a bounded prefix of their bytes and chooses the file extension for the pack member that
// will hold them.
//
// Converters use it in two places: on a few evenly spaced samples of a column or tar
// member group, to fill the evidence of a plan, and on every value while writing, to name
// members such as images/000000000042.jpg. A source extension (a tar member name, a
// Hugging Face "path" field) wins over sniffing; see [Ext].
//
// Detection is delegated to github.com/gabriel-vasile/mimetype, with one format added:
// NumPy .npy arrays (magic "\x93NUMPY"), which mimetype does not know. sniff checks that
// magic itself before asking mimetype instead of registering it with mimetype.Extend.
// Extend would change mimetype's process-global signature tree (for every user of
// mimetype in the process, once per call, so it would need a sync.Once); a check in front
// gives the same answer, since Extend puts a new detector first in the tree, and leaves
// sniff without global state. JPEG and PNG, the most common payloads, are answered the
// same way: before them mimetype tests only signatures that cannot start with their magic
// numbers (for PNG it then looks for animation chunks; sniff calls an animated PNG a PNG
// too). That takes a JPEG from about 140 ns to under 10 ns. A fuzz test holds these
// shortcuts to mimetype's labels and extensions. sniff never calls mimetype.SetLimit and
// assumes nothing else in the process does (see [PrefixLen]).
//
// BenchmarkDetect and BenchmarkPackWrite (go test -run - -bench . ./sniff) measure the
// cost of one Detect call per kind against the floor of writing one payload into a pack.
//
// A format is named only on a confident signature (see confident.go): mimetype says
// what the bytes look like, and sniff's own check of that format, at least about 32
// bits of fixed structure, decides. Two bytes of MP3 or AAC frame sync are not enough
// (MP3 and ADTS need three consecutive frames whose lengths and headers agree), nor is
// a JPEG's three-byte start of image alone (its first segment must be a known
// application segment or be followed by another valid marker); text must be UTF-8
// across the sniffed window with no control characters but tab, line and form feeds
// and carriage return (Latin-1 or UTF-16 text stays ".bin"). Formats without such a
// check (a bare JPEG XL codestream, an old binary cpio archive, an "MZ" without a PE
// header, and every format sniff does not list) are unknown. TestRandomStaysBin holds
// 20,000 random payloads to ".bin"; TestRealMedia holds files that ffmpeg writes in
// many settings to their extensions.
//
// sniff is not a validator: it does not decode payloads, check that a JPEG is complete or
// that a file matches its extension; it looks at the structure of the first bytes only.
package sniff

import (
	"bytes"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// PrefixLen is the number of leading bytes that [Detect] looks at. Callers that stream a
// payload need to keep only this many bytes to sniff it (see [Reader] and [Peek]).
//
// It equals mimetype's default read limit of 4096 bytes, on purpose: mimetype decides
// whether it was given a whole value or only the start of one by comparing the input
// length with that limit. A JSON document cut at 3072 bytes would be taken as a complete
// but broken document and reported as text; cut at 4096 bytes it is recognised as the
// start of a JSON document. Matroska's DocType ("matroska"/"webm") and the text check are
// also searched for within the first 4096 bytes. The binary signatures need far less
// (MP4's ftyp box: 12 bytes, NPY: 6, Ogg codec headers: 37), which the 16 bytes of the
// original blobpack tool covered, but 16 bytes cannot tell JSON from text nor WebM from
// Matroska. Larger prefixes would buy nothing, as mimetype cuts its input at its limit.
const PrefixLen = 4096

// Labels of the kinds that sniff names itself. Other formats that mimetype recognises
// and sniff checks get the upper-cased extension as label (for example "MOV", "ZIP",
// "AVIF").
const (
	LabelJPEG     = "JPEG"
	LabelPNG      = "PNG"
	LabelWebP     = "WebP"
	LabelGIF      = "GIF"
	LabelBMP      = "BMP"
	LabelTIFF     = "TIFF"
	LabelFLAC     = "FLAC"
	LabelWAV      = "WAV"
	LabelOgg      = "Ogg"
	LabelMP3      = "MP3"
	LabelMP4      = "MP4"
	LabelMatroska = "Matroska"
	LabelWebM     = "WebM"
	LabelPDF      = "PDF"
	LabelNPY      = "NPY"
	LabelJSON     = "JSON"
	LabelSVG      = "SVG"
	LabelHTML     = "HTML"
	LabelXML      = "XML"
	LabelText     = "text"
	LabelEmpty    = "empty"
	LabelUnknown  = "unknown"
)

// npyMIME is the media type sniff reports for NumPy arrays.
const npyMIME = "application/x-npy"

// Kind is what [Detect] found: a short label for people and plans, the member file
// extension (with its dot) and the media type. The zero Kind is not a valid result.
type Kind struct {
	Label string // for example "JPEG", "Matroska", "text", "unknown"
	Ext   string // for example ".jpg"; ".bin" for empty and unknown payloads
	MIME  string // media type without parameters, for example "image/jpeg"
}

// String returns the label.
func (k Kind) String() string { return k.Label }

// Known reports whether the payload was identified (it is neither empty nor unknown).
func (k Kind) Known() bool { return k.Label != LabelEmpty && k.Label != LabelUnknown && k.Label != "" }

// Detect identifies a payload from its first bytes. Pass the whole value or at least its
// first [PrefixLen] bytes: a slice shorter than PrefixLen is taken to be the complete
// value (which matters for JSON, whose end must then parse). Bytes past PrefixLen are
// ignored. An empty slice is LabelEmpty; bytes without a confident signature are
// LabelUnknown with ".bin".
func Detect(prefix []byte) Kind {
	if len(prefix) == 0 {
		return Kind{Label: LabelEmpty, Ext: ".bin"}
	}
	if len(prefix) > PrefixLen {
		prefix = prefix[:PrefixLen]
	}
	switch {
	case bytes.HasPrefix(prefix, []byte("\x93NUMPY")):
		return Kind{Label: LabelNPY, Ext: ".npy", MIME: npyMIME}
	case bytes.HasPrefix(prefix, []byte("\xFF\xD8\xFF")) && jpegOK(prefix):
		return Kind{Label: LabelJPEG, Ext: ".jpg", MIME: "image/jpeg"}
	case bytes.HasPrefix(prefix, []byte("\x89PNG\r\n\x1A\n")):
		// mimetype would scan the chunks for an animated PNG; sniff names both PNG.
		return Kind{Label: LabelPNG, Ext: ".png", MIME: "image/png"}
	}
	return detectMIME(prefix)
}

// unknown is the kind of bytes without a confident signature.
var unknown = Kind{Label: LabelUnknown, Ext: ".bin", MIME: "application/octet-stream"}

// detectMIME asks mimetype which format the prefix looks like, and names it
// only when sniff's own check of that format is confident (see confident);
// prefix is non-empty and at most PrefixLen bytes long.
func detectMIME(prefix []byte) Kind {
	m := mimetype.Detect(prefix)
	top := m
	for top.Parent() != nil && top.Parent().Parent() != nil {
		top = top.Parent()
	}
	if top.Parent() == nil {
		if bytes.HasPrefix(prefix, []byte("\x1A\x45\xDF\xA3")) {
			// EBML header whose DocType lies beyond the prefix or is unusual.
			return Kind{Label: LabelMatroska, Ext: ".mkv", MIME: "video/x-matroska"}
		}
		return unknown // mimetype's root: no signature, not text
	}
	topMIME := baseMIME(top.String())
	if topMIME == "text/plain" {
		if !confidentText(prefix) {
			return unknown
		}
		if k, ok := known(baseMIME(m.String())); ok {
			return k
		}
		// Text formats mimetype knows but sniff does not name (CSV, subtitles, scripts,
		// GeoJSON, RSS...) take their nearest named ancestor: JSON, XML or text. A caption
		// that happens to parse as CSV should not get a different extension from its
		// neighbours.
		for p := m.Parent(); p != nil; p = p.Parent() {
			if k, ok := known(baseMIME(p.String())); ok && isText(k) {
				return k
			}
		}
		return Kind{Label: LabelText, Ext: ".txt", MIME: "text/plain"}
	}
	if !confident(topMIME, prefix) {
		// A weak look (two bytes of frame sync, a short magic) is no signature; text
		// that happens to start like one is still text.
		if confidentText(prefix) {
			return Kind{Label: LabelText, Ext: ".txt", MIME: "text/plain"}
		}
		return unknown
	}
	if k, ok := known(baseMIME(m.String())); ok {
		return k
	}
	if topMIME == "video/matroska" {
		return Kind{Label: LabelMatroska, Ext: ".mkv", MIME: "video/x-matroska"}
	}
	if ext, ok := cleanExt(strings.TrimPrefix(m.Extension(), ".")); ok {
		return Kind{Label: strings.ToUpper(ext[1:]), Ext: ext, MIME: baseMIME(m.String())}
	}
	return unknown
}

// known maps the media types sniff names itself to their kinds.
func known(mime string) (Kind, bool) {
	k := Kind{MIME: mime}
	switch mime {
	case "image/jpeg":
		k.Label, k.Ext = LabelJPEG, ".jpg"
	case "image/png", "image/apng": // an animated PNG is a PNG to every PNG reader
		k.Label, k.Ext = LabelPNG, ".png"
	case "image/webp":
		k.Label, k.Ext = LabelWebP, ".webp"
	case "image/gif":
		k.Label, k.Ext = LabelGIF, ".gif"
	case "image/bmp":
		k.Label, k.Ext = LabelBMP, ".bmp"
	case "image/tiff":
		k.Label, k.Ext = LabelTIFF, ".tiff"
	case "audio/flac":
		k.Label, k.Ext = LabelFLAC, ".flac"
	case "audio/wav":
		k.Label, k.Ext = LabelWAV, ".wav"
	case "application/ogg", "audio/ogg", "video/ogg":
		// mimetype says .oga/.ogv; .ogg is what datasets and players expect.
		k.Label, k.Ext = LabelOgg, ".ogg"
	case "audio/mpeg":
		k.Label, k.Ext = LabelMP3, ".mp3"
	case "video/mp4":
		k.Label, k.Ext = LabelMP4, ".mp4"
	case "video/x-matroska":
		k.Label, k.Ext = LabelMatroska, ".mkv"
	case "video/webm":
		k.Label, k.Ext = LabelWebM, ".webm"
	case "application/pdf":
		k.Label, k.Ext = LabelPDF, ".pdf"
	case npyMIME:
		k.Label, k.Ext = LabelNPY, ".npy"
	case "application/json":
		k.Label, k.Ext = LabelJSON, ".json"
	case "image/svg+xml":
		k.Label, k.Ext = LabelSVG, ".svg"
	case "text/html":
		k.Label, k.Ext = LabelHTML, ".html"
	case "text/xml":
		k.Label, k.Ext = LabelXML, ".xml"
	case "text/plain":
		k.Label, k.Ext = LabelText, ".txt"
	default:
		return Kind{}, false
	}
	return k, true
}

func isText(k Kind) bool {
	return k.Label == LabelJSON || k.Label == LabelXML || k.Label == LabelText
}

// baseMIME drops parameters: "text/plain; charset=utf-8" becomes "text/plain".
func baseMIME(s string) string {
	s, _, _ = strings.Cut(s, ";")
	return strings.TrimSpace(s)
}

// Ext returns the extension, with its dot, for the pack member that will hold a payload.
// The extension of sourceName (a tar member name, a Hugging Face "path" field, a file
// name) wins when it is usable (see [SourceExt]); otherwise the payload's prefix decides,
// through [Detect]. sourceName may be empty.
func Ext(sourceName string, prefix []byte) string {
	if ext, ok := SourceExt(sourceName); ok {
		return ext
	}
	return Detect(prefix).Ext
}

// maxExtLen bounds the length of an extension, without its dot.
const maxExtLen = 16

// SourceExt returns the extension of the last path element of name, lower-cased and with
// its dot, and whether it is usable as a member extension.
//
// Only the part after the last dot of the last "/"-separated element counts, so
// "0001.seg.png" gives ".png". A name without a dot, a dot file such as ".hidden", a name
// ending in a dot, or an extension longer than 16 characters or holding anything but
// ASCII letters, digits, '_', '-' and '+' is refused (ok is false): that excludes "/",
// "::", spaces, control characters and non-ASCII text, which would make member names
// ambiguous in references or awkward in shells. Extensions are lower-cased so that
// "IMG_1.JPG" and "img_2.jpg" land side by side as ".jpg"; the source spelling is not
// otherwise changed (".jpeg" stays ".jpeg").
func SourceExt(name string) (ext string, ok bool) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return "", false
	}
	return cleanExt(name[i+1:])
}

// cleanExt validates and lower-cases an extension given without its dot.
func cleanExt(e string) (string, bool) {
	if e == "" || len(e) > maxExtLen {
		return "", false
	}
	b := make([]byte, 0, len(e)+1)
	b = append(b, '.')
	for i := 0; i < len(e); i++ {
		c := e[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_', c == '-', c == '+':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			return "", false
		}
		b = append(b, c)
	}
	return string(b), true
}

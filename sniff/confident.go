package sniff

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// A kind is named only on a confident signature: a check of sniff's own, per
// format, that random bytes pass with a probability of about 2^-32 or less.
// mimetype decides which format a prefix looks like; the check for that
// format (by the top of mimetype's tree, the node just below
// application/octet-stream) then decides whether the look is strong enough.
// A format without a check here is never named, and its payloads keep
// ".bin". The strength of each check, in bits of the prefix it fixes, is
// given beside it; incompressible data with a weak look (two bytes of MP3
// or AAC frame sync, the two bytes of a binary cpio header, a JPEG XL
// codestream's 0xFF0A, an "MZ") stays unknown.

// confident reports whether prefix b carries a confident signature of the
// format whose top-level media type (in mimetype's tree) is top.
func confident(top string, b []byte) bool {
	check, ok := signatures[top]
	return ok && check(b)
}

// prefix is the check for formats that begin with one of the magics given.
func prefix(magics ...string) func(b []byte) bool {
	return func(b []byte) bool {
		for _, m := range magics {
			if bytes.HasPrefix(b, []byte(m)) {
				return true
			}
		}
		return false
	}
}

// signatures holds, by the top-level media type of a format (in mimetype's
// tree), the check that a prefix carries a confident signature of it.
var signatures = map[string]func(b []byte) bool{
	// Named kinds.
	"image/jpeg": jpegOK,
	"image/png":  prefix("\x89PNG\r\n\x1A\n"), // 64 bits
	"image/apng": prefix("\x89PNG\r\n\x1A\n"), // 64 bits
	"image/gif":  prefix("GIF87a", "GIF89a"),  // 48 bits
	// 96 bits
	"image/webp": func(b []byte) bool {
		return riff(b, "WEBP") && len(b) >= 16 && (string(b[12:16]) == "VP8 " || string(b[12:16]) == "VP8L" || string(b[12:16]) == "VP8X")
	},
	"image/bmp":  bmpOK,
	"image/tiff": tiffOK,
	// "fLaC" and a STREAMINFO block header (type 0, 34 bytes), the last-block bit either way: 63 bits
	"audio/flac": func(b []byte) bool {
		return len(b) >= 8 && string(b[:4]) == "fLaC" && b[4]&0x7F == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0x22
	},
	// 64 bits
	"audio/wav": func(b []byte) bool {
		return riff(b, "WAVE")
	},
	// capture pattern, version 0, a beginning-of-stream page: 41 bits and more (mimetype also names the codec)
	"application/ogg": func(b []byte) bool {
		return len(b) >= 27 && string(b[:5]) == "OggS\x00" && b[5]&0x02 != 0
	},
	"audio/mpeg": func(b []byte) bool {
		return id3v2(b) || mpegFrames(b)
	},
	"audio/aac": adtsFrames,
	// 40 bits and a printable brand
	"video/mp4": func(b []byte) bool {
		return isoBox(b, "ftyp") && printable(b[8:12])
	},
	"video/quicktime":  quickTimeOK,
	"video/matroska":   prefix("\x1A\x45\xDF\xA3"), // EBML magic, 32 bits; mimetype adds the DocType
	"video/x-matroska": prefix("\x1A\x45\xDF\xA3"), // EBML magic, 32 bits; mimetype adds the DocType
	"video/webm":       prefix("\x1A\x45\xDF\xA3"), // EBML magic, 32 bits; mimetype adds the DocType
	"application/pdf":  prefix("%PDF-"),            // 40 bits

	// Other formats, named by their extension.
	// local file header, or the end record of an empty archive: 32 bits
	"application/zip":  prefix("PK\x03\x04", "PK\x05\x06"),
	"application/gzip": gzipOK,
	// "BZh", a block size digit, then a block or end-of-stream magic: 80 bits
	"application/x-bzip2": func(b []byte) bool {
		return len(b) >= 10 && string(b[:3]) == "BZh" && b[3] >= '1' && b[3] <= '9' &&
			(string(b[4:10]) == "\x31\x41\x59\x26\x53\x59" || string(b[4:10]) == "\x17\x72\x45\x38\x50\x90")
	},
	"application/x-xz":            prefix("\xFD7zXZ\x00"),       // 48 bits
	"application/zstd":            prefix("\x28\xB5\x2F\xFD"),   // 32 bits
	"application/x-7z-compressed": prefix("7z\xBC\xAF\x27\x1C"), // 48 bits
	"application/x-tar":           tarOK,
	// 64 bits
	"video/x-msvideo": func(b []byte) bool {
		return riff(b, "AVI ")
	},
	// 63 bits
	"audio/aiff": func(b []byte) bool {
		return len(b) >= 12 && string(b[:4]) == "FORM" && (string(b[8:12]) == "AIFF" || string(b[8:12]) == "AIFC")
	},
	"audio/midi":     prefix("MThd\x00\x00\x00\x06"),                                             // 64 bits
	"video/x-flv":    prefix("FLV\x01"),                                                          // 32 bits
	"video/x-ms-asf": prefix("\x30\x26\xB2\x75\x8E\x66\xCF\x11\xA6\xD9\x00\xAA\x00\x62\xCE\x6C"), // 128 bits
	"image/jp2":      prefix("\x00\x00\x00\x0CjP  \r\n\x87\n"),                                   // JPEG 2000 signature box, 96 bits
	"image/jpx":      prefix("\x00\x00\x00\x0CjP  \r\n\x87\n"),                                   // JPEG 2000 signature box, 96 bits
	"image/jpm":      prefix("\x00\x00\x00\x0CjP  \r\n\x87\n"),                                   // JPEG 2000 signature box, 96 bits
	// the ISO container only: a bare codestream starts with two bytes (0xFF0A)
	"image/jxl": prefix("\x00\x00\x00\x0CJXL \r\n\x87\n"), // 96 bits
	// 47 bits
	"image/vnd.adobe.photoshop": func(b []byte) bool {
		return len(b) >= 6 && string(b[:4]) == "8BPS" && b[4] == 0 && (b[5] == 1 || b[5] == 2)
	},
	"application/vnd.apache.parquet":                prefix("PAR1"),                             // 32 bits
	"application/vnd.sqlite3":                       prefix("SQLite format 3\x00"),              // 128 bits
	"application/x-ole-storage":                     prefix("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1"), // 64 bits
	"application/vnd.rar":                           prefix("Rar!\x1A\x07"),                     // 48 bits
	"application/x-elf":                             prefix("\x7FELF"),                          // 32 bits
	"application/vnd.microsoft.portable-executable": peOK,
	"application/wasm":                              prefix("\x00asm"), // 32 bits
	// the portable ASCII headers only; the old binary one has a two-byte magic
	"application/x-cpio": prefix("070707", "070701", "070702"), // 48 bits
	"font/woff":          prefix("wOFF", "wOF2", "OTTO"),       // 32 bits
	"font/woff2":         prefix("wOFF", "wOF2", "OTTO"),       // 32 bits
	"font/otf":           prefix("wOFF", "wOF2", "OTTO"),       // 32 bits
	// 64 bits
	"model/gltf-binary": func(b []byte) bool {
		return len(b) >= 8 && string(b[:4]) == "glTF" && binary.LittleEndian.Uint32(b[4:]) == 2
	},
	// 32 bits
	"application/dicom": func(b []byte) bool {
		return len(b) >= 132 && string(b[128:132]) == "DICM"
	},
	"application/x-java-applet": prefix("\xCA\xFE\xBA\xBE"), // 32 bits
	"application/postscript":    prefix("%!PS"),             // 32 bits
}

// riff reports a RIFF header of the given form type.
func riff(b []byte, form string) bool {
	return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == form
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7E {
			return false
		}
	}
	return true
}

// isoBox reports an ISO base media box of the given type at the start: the
// first size byte zero (a first box is small) and the type: 40 bits.
func isoBox(b []byte, typ string) bool {
	return len(b) >= 12 && b[0] == 0 && string(b[4:8]) == typ
}

// quickTimeOK accepts a QuickTime ftyp box (brand "qt  "), or a first atom of
// a type QuickTime files start with, of a plausible size: 40 bits and more.
func quickTimeOK(b []byte) bool {
	if len(b) < 12 {
		return false
	}
	if isoBox(b, "ftyp") {
		return true
	}
	size := binary.BigEndian.Uint32(b)
	switch string(b[4:8]) {
	case "moov", "mdat", "free", "skip", "wide", "pnot":
		return b[0] == 0 && size >= 8
	}
	return false
}

// jpegOK accepts a JPEG whose start of image is followed by a marker
// segment that is either an application segment with a known identifier
// (JFIF, Exif, XMP, ICC, Adobe, ...) or a valid table or frame segment
// followed by another valid marker: the 24-bit SOI and marker prefix alone
// is not enough.
func jpegOK(b []byte) bool {
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 || b[2] != 0xFF {
		return false
	}
	pos := 2
	for seg := 0; ; seg++ {
		for pos+1 < len(b) && b[pos] == 0xFF && b[pos+1] == 0xFF {
			pos++ // fill bytes
		}
		if pos+4 > len(b) || b[pos] != 0xFF {
			return false
		}
		m := b[pos+1]
		if seg > 0 && (m == 0xDA || m == 0xD9) {
			return true // start of scan (or end of image) after a valid segment
		}
		if !jpegSegment(m) {
			return false
		}
		n := int(binary.BigEndian.Uint16(b[pos+2:]))
		if n < 2 {
			return false
		}
		if seg == 0 && m >= 0xE0 && m <= 0xEF && knownAPP(m, b[pos+4:]) {
			return true
		}
		if seg > 0 {
			return true // two valid segment headers in a row
		}
		pos += 2 + n
	}
}

// jpegSegment reports markers that start a segment with a length after SOI.
func jpegSegment(m byte) bool {
	switch {
	case m >= 0xE0 && m <= 0xEF: // APPn
	case m >= 0xC0 && m <= 0xCF && m != 0xC8: // SOFn, DHT, DAC
	case m == 0xDB, m == 0xDD, m == 0xFE: // DQT, DRI, COM
	default:
		return false
	}
	return true
}

// knownAPP reports an application segment identifier that JPEG writers use.
func knownAPP(m byte, b []byte) bool {
	var ids []string
	switch m {
	case 0xE0:
		ids = []string{"JFIF\x00", "JFXX\x00"}
	case 0xE1:
		ids = []string{"Exif\x00", "http://ns.adobe.com/xap/1.0/\x00"}
	case 0xE2:
		ids = []string{"ICC_PROFILE\x00", "MPF\x00"}
	case 0xEC:
		ids = []string{"Ducky"}
	case 0xED:
		ids = []string{"Photoshop 3.0\x00"}
	case 0xEE:
		ids = []string{"Adobe"}
	}
	for _, id := range ids {
		if len(b) >= len(id) && string(b[:len(id)]) == id {
			return true
		}
	}
	return false
}

// bmpOK checks the BMP file header: "BM", reserved fields zero, a known DIB
// header size and a pixel offset past the headers: more than 64 bits.
func bmpOK(b []byte) bool {
	if len(b) < 26 || b[0] != 'B' || b[1] != 'M' || binary.LittleEndian.Uint32(b[6:]) != 0 {
		return false
	}
	dib := binary.LittleEndian.Uint32(b[14:])
	switch dib {
	case 12, 16, 24, 40, 48, 52, 56, 64, 108, 124:
	default:
		return false
	}
	off := binary.LittleEndian.Uint32(b[10:])
	return off >= 14+dib && off < 1<<24
}

// tiffOK checks the byte order mark, the magic 42 and a first IFD offset
// past the header: 32 bits and more.
func tiffOK(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	var off uint32
	switch string(b[:4]) {
	case "II*\x00":
		off = binary.LittleEndian.Uint32(b[4:])
	case "MM\x00*":
		off = binary.BigEndian.Uint32(b[4:])
	default:
		return false
	}
	return off >= 8
}

// gzipOK checks the member header: magic, deflate, no reserved flag bits,
// a known extra-flags value and operating system: about 42 bits.
func gzipOK(b []byte) bool {
	if len(b) < 10 || b[0] != 0x1F || b[1] != 0x8B || b[2] != 8 || b[3]&0xE0 != 0 {
		return false
	}
	if xfl := b[8]; xfl != 0 && xfl != 2 && xfl != 4 {
		return false
	}
	return b[9] <= 13 || b[9] == 255
}

// tarOK checks a ustar magic or a valid header checksum: 48 bits and more.
func tarOK(b []byte) bool {
	if len(b) < 512 {
		return false
	}
	if string(b[257:263]) == "ustar\x00" || string(b[257:265]) == "ustar  \x00" {
		return true
	}
	var want int64
	n := 0
	for _, c := range b[148:156] {
		switch {
		case c >= '0' && c <= '7':
			want = want*8 + int64(c-'0')
			n++
		case c == 0 || c == ' ':
		default:
			return false
		}
	}
	if n == 0 {
		return false
	}
	var sum int64
	for i, c := range b[:512] {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum == want
}

// peOK accepts an "MZ" executable only with a PE signature where its header
// points: 48 bits and more.
func peOK(b []byte) bool {
	if len(b) < 0x40 || b[0] != 'M' || b[1] != 'Z' {
		return false
	}
	off := int(binary.LittleEndian.Uint32(b[0x3C:]))
	return off >= 0x40 && off+4 <= len(b) && string(b[off:off+4]) == "PE\x00\x00"
}

// id3v2 checks an ID3v2.2-2.4 tag header: "ID3", version, revision 0, no
// undefined flags, a synchsafe non-zero size: about 40 bits.
func id3v2(b []byte) bool {
	if len(b) < 10 || string(b[:3]) != "ID3" || b[3] < 2 || b[3] > 4 || b[4] != 0 || b[5]&0x0F != 0 {
		return false
	}
	if (b[6]|b[7]|b[8]|b[9])&0x80 != 0 {
		return false
	}
	return b[6]|b[7]|b[8]|b[9] != 0
}

// Frames needed for a confident MPEG audio or ADTS stream: the first frame
// header and this many more at the offsets the lengths give, each agreeing
// with the first on version, layer and sample rate (about 17 bits a frame).
const moreFrames = 2

// mpegFrames checks a chain of MPEG audio frames from the first byte.
func mpegFrames(b []byte) bool {
	first, n := mpegHeader(b)
	if n == 0 {
		return false
	}
	return chain(b, n, moreFrames, func(h []byte) int {
		if h2, n2 := mpegHeader(h); n2 > 0 && h2 == first {
			return n2
		}
		return 0
	})
}

// chain follows frames from offset n: it reports whether want more frames
// follow, each accepted by next (which returns the frame's length, 0 for no
// frame). A value that ends exactly after at least one more frame counts too;
// a window cut in a frame header does not.
func chain(b []byte, n, want int, next func([]byte) int) bool {
	pos := n
	for got := 0; got < want; got++ {
		if pos == len(b) && got > 0 && len(b) < PrefixLen {
			return true // the whole value: it ended after a frame
		}
		if pos+4 > len(b) {
			return false
		}
		k := next(b[pos:])
		if k == 0 {
			return false
		}
		pos += k
	}
	return true
}

// mpegHeader parses an MPEG-1/2/2.5 layer I-III frame header: the fields
// every frame of a stream shares and the frame's length (0 if invalid).
func mpegHeader(b []byte) (shared uint32, n int) {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return 0, 0
	}
	ver := (b[1] >> 3) & 3 // 0: 2.5, 1: reserved, 2: 2, 3: 1
	layer := (b[1] >> 1) & 3
	bri := int(b[2] >> 4)
	sri := int(b[2]>>2) & 3
	if ver == 1 || layer == 0 || bri == 0 || bri == 15 || sri == 3 || b[3]&3 == 2 {
		return 0, 0
	}
	pad := int(b[2]>>1) & 1
	rates := [4][3]int{{11025, 12000, 8000}, {}, {22050, 24000, 16000}, {44100, 48000, 32000}}
	sr := rates[ver][sri]
	var kbps int
	v1 := ver == 3
	switch {
	case v1 && layer == 3: // layer I
		kbps = []int{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448}[bri]
	case v1 && layer == 2: // layer II
		kbps = []int{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384}[bri]
	case v1: // layer III
		kbps = []int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}[bri]
	case layer == 3:
		kbps = []int{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256}[bri]
	default:
		kbps = []int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}[bri]
	}
	br := kbps * 1000
	switch {
	case layer == 3:
		n = (12*br/sr + pad) * 4
	case layer == 1 && !v1:
		n = 72*br/sr + pad
	default:
		n = 144*br/sr + pad
	}
	// the sync, version, layer and sample rate bits are the same in every frame
	return uint32(b[1]&0xFE)<<8 | uint32(b[2]&0x0C), n
}

// adtsFrames checks a chain of ADTS (AAC) frames from the first byte.
func adtsFrames(b []byte) bool {
	first, n := adtsHeader(b)
	if n == 0 {
		return false
	}
	return chain(b, n, moreFrames, func(h []byte) int {
		if h2, n2 := adtsHeader(h); n2 > 0 && h2 == first {
			return n2
		}
		return 0
	})
}

// adtsHeader parses an ADTS header: the fields every frame of a stream
// shares and the frame's length (0 if invalid).
func adtsHeader(b []byte) (shared uint32, n int) {
	if len(b) < 7 || b[0] != 0xFF || b[1]&0xF6 != 0xF0 { // sync, layer 0
		return 0, 0
	}
	if (b[2]>>2)&0x0F > 12 { // sampling frequency index
		return 0, 0
	}
	n = int(b[3]&3)<<11 | int(b[4])<<3 | int(b[5]>>5)
	hdr := 7
	if b[1]&1 == 0 {
		hdr = 9 // with CRC
	}
	if n <= hdr {
		return 0, 0
	}
	// ID, profile, sampling frequency, channel configuration
	return uint32(b[1]&0x08)<<16 | uint32(b[2]&0xFD)<<8 | uint32(b[3]&0xC0), n
}

// confidentText reports text in UTF-8: the whole prefix valid UTF-8 (but
// for a character cut by the end of a full PrefixLen window), with no
// control characters but tab, line feed, form feed and carriage return,
// and no C1 controls.
func confidentText(b []byte) bool {
	if len(b) >= PrefixLen {
		// a multi-byte character cut at the end of the window
		for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
			c := b[len(b)-i]
			if c < 0x80 {
				break
			}
			if utf8.RuneStart(c) {
				if !utf8.FullRune(b[len(b)-i:]) {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' || c == 0x7F {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		if r >= 0x80 && r <= 0x9F {
			return false
		}
		i += size
	}
	return true
}

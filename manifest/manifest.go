package manifest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chunkvc/chunkvc/geom"
	"github.com/chunkvc/chunkvc/hashing"
)

// Version is the manifest format version this package writes.
const Version = 1

// Limits applied before anything from an untrusted manifest is allocated.
const (
	MaxManifest = 512 << 20 // bytes of manifest text
	MaxKeyLen   = 200       // an adapter key (≤ 120) plus a completed content hash
	MaxChunkLen = 64 << 20
)

// ErrInvalid is wrapped by every Decode error.
var ErrInvalid = errors.New("invalid manifest")

// Field is a summary line.
type Field struct{ Name, Value string }

// Chunk is one chunk line.
type Chunk struct {
	Key  string
	Size int64
	ID   hashing.ID
	BBox *geom.BBox // the footprint, nil when unknown
}

// Manifest describes one tracked file.
type Manifest struct {
	Path          string
	Format        string
	FormatVersion int
	Params        string
	Fallback      string
	Size          int64
	Digest        hashing.ID // BLAKE3 of the whole file
	Layout        hashing.ID // layout blob id
	LayoutSize    int64
	Summary       []Field
	Chunks        []Chunk // sorted by NaturalLess of Key, keys unique
}

// SummaryValue returns the value of the named summary field, or "".
func (m *Manifest) SummaryValue(name string) string {
	for _, f := range m.Summary {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// Encode writes the canonical text of m. It fails on values that have no
// canonical spelling (line breaks, unsorted or duplicate keys, …).
func (m *Manifest) Encode() ([]byte, error) {
	var out []byte
	err := m.encode(len(m.Chunks)*160, func(b []byte) ([]byte, error) { out = b; return nil, nil }, 0)
	return out, err
}

// EncodeTo writes Encode's text to w, in pieces of about 64 KiB, without
// holding it whole (a COG of 500,000 tiles has a manifest of 80 MB), and
// returns its length. It writes nothing if m has no canonical text.
func (m *Manifest) EncodeTo(w io.Writer) (int64, error) {
	var n int64
	err := m.encode(encodeBuffer+512, func(b []byte) ([]byte, error) {
		k, err := w.Write(b)
		n += int64(k)
		return b[:0], err
	}, encodeBuffer)
	return n, err
}

// encodeBuffer is how much text EncodeTo gathers before a write.
const encodeBuffer = 64 << 10

// encode validates m and gives its text to flush: once at the end, or
// also whenever more than every bytes are gathered when every > 0. flush
// returns the buffer to go on with.
func (m *Manifest) encode(size int, flush func([]byte) ([]byte, error), every int) error {
	if err := m.validate(); err != nil {
		return err
	}
	b := bytes.NewBuffer(make([]byte, 0, size))
	fmt.Fprintf(b, "chunkvc-manifest %d\n", Version)
	fmt.Fprintf(b, "path %s\n", m.Path)
	fmt.Fprintf(b, "format %s %d\n", m.Format, m.FormatVersion)
	if m.Params != "" {
		fmt.Fprintf(b, "params %s\n", m.Params)
	}
	if m.Fallback != "" {
		fmt.Fprintf(b, "fallback %s\n", m.Fallback)
	}
	fmt.Fprintf(b, "size %d\n", m.Size)
	fmt.Fprintf(b, "digest %s\n", m.Digest.Tagged())
	fmt.Fprintf(b, "layout %s %d\n", m.Layout.Tagged(), m.LayoutSize)
	for _, f := range m.Summary {
		fmt.Fprintf(b, "summary %s %s\n", f.Name, f.Value)
	}
	fmt.Fprintf(b, "chunks %d\n", len(m.Chunks))
	// Chunk lines are appended to one buffer without a string per field:
	// a 100k-chunk manifest is encoded again on every decode.
	out := b.Bytes()
	sp := spellings{at: map[uint64][2]int{}}
	var err error
	for _, c := range m.Chunks {
		if every > 0 && len(out) > every {
			if out, err = flush(out); err != nil {
				return err
			}
		}
		out = appendChunkLine(out, c, &sp)
	}
	_, err = flush(out)
	return err
}

// appendChunkLine appends c's line, spelling coordinates through sp.
func appendChunkLine(out []byte, c Chunk, sp *spellings) []byte {
	out = append(out, c.Key...)
	out = append(out, ' ')
	out = strconv.AppendInt(out, c.Size, 10)
	out = append(out, ' ')
	out = hex.AppendEncode(out, c.ID[:])
	if c.BBox != nil {
		out = append(out, ' ')
		for i, v := range c.BBox.Array() {
			if i > 0 {
				out = append(out, ',')
			}
			out = sp.append(out, v)
		}
	}
	return append(out, '\n')
}

// spellings remembers how an encoding spelled each coordinate. The tiles
// of a grid share their edges, so most coordinates of a line were spelled
// on an earlier one; formatting every one again was most of the time of
// encoding a COG's manifest (and of decoding it, which encodes it again).
type spellings struct {
	at   map[uint64][2]int // float bits → offsets of its text in text
	text []byte
}

// maxSpellings bounds the map for manifests of scattered footprints.
const maxSpellings = 1 << 12

// append appends v as appendCoord spells it.
func (sp *spellings) append(out []byte, v float64) []byte {
	k := math.Float64bits(v) // not v: 0 and -0 are spelled apart
	if at, ok := sp.at[k]; ok {
		return append(out, sp.text[at[0]:at[1]]...)
	}
	if len(sp.at) >= maxSpellings {
		clear(sp.at)
		sp.text = sp.text[:0]
	}
	start := len(sp.text)
	sp.text = appendCoord(sp.text, v)
	sp.at[k] = [2]int{start, len(sp.text)}
	return append(out, sp.text[start:]...)
}

// appendCoord appends v as manifests spell coordinates.
func appendCoord(out []byte, v float64) []byte { return strconv.AppendFloat(out, v, 'f', -1, 64) }

// appendBBox appends bb as FormatBBox spells it.
func appendBBox(out []byte, bb geom.BBox) []byte {
	for i, v := range bb.Array() {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendCoord(out, v)
	}
	return out
}

// FormatBBox spells a bbox the one way manifests do: shortest decimal that
// round-trips, no exponent (geom.BBox.String rounds; this never does). A
// manifest holds only valid boxes (geom.BBox.Valid).
func FormatBBox(bb geom.BBox) string {
	return string(appendBBox(nil, bb))
}

func (m *Manifest) validate() error {
	if err := CheckPath(m.Path); err != nil {
		return err
	}
	if !isWord(m.Format) || m.FormatVersion < 0 {
		return fmt.Errorf("%w: format %q version %d", ErrInvalid, m.Format, m.FormatVersion)
	}
	for _, s := range []string{m.Params, m.Fallback} {
		if !isLineValue(s) {
			return fmt.Errorf("%w: value %q is not a single printable line", ErrInvalid, s)
		}
	}
	if m.Size < 0 || m.LayoutSize < 0 {
		return fmt.Errorf("%w: negative size", ErrInvalid)
	}
	for _, f := range m.Summary {
		if !isWord(f.Name) || !isLineValue(f.Value) {
			return fmt.Errorf("%w: summary %q=%q", ErrInvalid, f.Name, f.Value)
		}
	}
	for i, c := range m.Chunks {
		if err := checkKey(c.Key); err != nil {
			return err
		}
		if c.Size < 0 || c.Size > MaxChunkLen {
			return fmt.Errorf("%w: chunk %s size %d", ErrInvalid, c.Key, c.Size)
		}
		if c.BBox != nil && !c.BBox.Valid() {
			return fmt.Errorf("%w: chunk %s bbox %v", ErrInvalid, c.Key, c.BBox.Array())
		}
		if i > 0 && !NaturalLess(m.Chunks[i-1].Key, c.Key) {
			return fmt.Errorf("%w: chunk keys %q and %q out of order or repeated", ErrInvalid, m.Chunks[i-1].Key, c.Key)
		}
	}
	return nil
}

// CheckPath accepts a clean, relative, slash-separated path inside the work
// tree: no "..", no absolute path, no empty or "." elements, no control
// characters, not under .git.
func CheckPath(p string) error {
	if p == "" || len(p) > 4096 || !utf8.ValidString(p) || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("%w: path %q", ErrInvalid, p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%w: path %q has a control character or backslash", ErrInvalid, p)
		}
	}
	first := true
	for el := range strings.SplitSeq(p, "/") {
		if el == "" || el == "." || el == ".." || (first && strings.EqualFold(el, ".git")) {
			return fmt.Errorf("%w: path %q leaves the work tree or names .git", ErrInvalid, p)
		}
		first = false
	}
	return nil
}

func checkKey(k string) error {
	if k == "" || len(k) > MaxKeyLen {
		return fmt.Errorf("%w: chunk key %q length", ErrInvalid, k)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: chunk key %q has byte %#x", ErrInvalid, k, c)
		}
	}
	return nil
}

func isWord(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isLineValue(s string) bool {
	if len(s) > 4096 || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// SanitizeValue turns any string into a valid summary value: control
// characters become spaces, runs of space collapse, length is capped.
func SanitizeValue(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = strings.ToValidUTF8(s[:400], "") + "…"
	}
	return s
}

// Decode parses a manifest and accepts only its canonical encoding.
func Decode(data []byte) (*Manifest, error) {
	if len(data) > MaxManifest {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrInvalid, len(data), MaxManifest)
	}
	m, err := parse(data)
	if err != nil {
		return nil, err
	}
	again, err := m.Encode()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, data) {
		return nil, fmt.Errorf("%w: not in canonical form (line %d)", ErrInvalid, firstDiffLine(again, data))
	}
	return m, nil
}

func firstDiffLine(a, b []byte) int {
	line := 1
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return line
		}
		if a[i] == '\n' {
			line++
		}
	}
	return line
}

func parse(data []byte) (*Manifest, error) {
	// One string for the whole text: keys and values are slices of it,
	// not a string per line.
	text := string(data)
	ln := 0
	var lineErr error
	line := func() (string, bool) {
		if text == "" || lineErr != nil {
			return "", false
		}
		ln++
		l, rest, _ := strings.Cut(text, "\n")
		text = rest
		if len(l) > maxLine {
			lineErr = fmt.Errorf("%w: line %d: longer than %d bytes", ErrInvalid, ln, maxLine)
			return "", false
		}
		return l, true
	}
	next := func() (string, string, bool) {
		l, ok := line()
		if !ok {
			return "", "", false
		}
		w, rest, _ := strings.Cut(l, " ")
		return w, rest, true
	}
	bad := func(what string) error {
		if lineErr != nil {
			return lineErr
		}
		return fmt.Errorf("%w: line %d: %s", ErrInvalid, ln, what)
	}
	m := &Manifest{}
	w, rest, ok := next()
	if !ok || w != "chunkvc-manifest" || rest != strconv.Itoa(Version) {
		return nil, bad("not a chunkvc manifest version 1")
	}
	w, rest, ok = next()
	if !ok || w != "path" {
		return nil, bad("want path")
	}
	m.Path = rest
	w, rest, ok = next()
	if !ok || w != "format" {
		return nil, bad("want format")
	}
	name, ver, _ := strings.Cut(rest, " ")
	v, err := strconv.Atoi(ver)
	if err != nil {
		return nil, bad("format version")
	}
	m.Format, m.FormatVersion = name, v
	w, rest, ok = next()
	if ok && w == "params" {
		m.Params = rest
		w, rest, ok = next()
	}
	if ok && w == "fallback" {
		m.Fallback = rest
		w, rest, ok = next()
	}
	if !ok || w != "size" {
		return nil, bad("want size")
	}
	if m.Size, err = strconv.ParseInt(rest, 10, 64); err != nil {
		return nil, bad("size")
	}
	if w, rest, ok = next(); !ok || w != "digest" {
		return nil, bad("want digest")
	}
	if m.Digest, err = hashing.ParseID(rest); err != nil {
		return nil, bad(err.Error())
	}
	if w, rest, ok = next(); !ok || w != "layout" {
		return nil, bad("want layout")
	}
	lid, lsz, _ := strings.Cut(rest, " ")
	if m.Layout, err = hashing.ParseID(lid); err != nil {
		return nil, bad(err.Error())
	}
	if m.LayoutSize, err = strconv.ParseInt(lsz, 10, 64); err != nil {
		return nil, bad("layout size")
	}
	for {
		if w, rest, ok = next(); !ok {
			return nil, bad("want chunks")
		}
		if w != "summary" {
			break
		}
		n, val, _ := strings.Cut(rest, " ")
		m.Summary = append(m.Summary, Field{Name: n, Value: val})
		if len(m.Summary) > 1000 {
			return nil, bad("too many summary lines")
		}
	}
	if w != "chunks" {
		return nil, bad("want chunks")
	}
	count, err := strconv.Atoi(rest)
	if err != nil || count < 0 || count > len(data)/70 {
		return nil, bad("chunk count")
	}
	m.Chunks = make([]Chunk, 0, count)
	cp := chunkParser{bboxes: make([]geom.BBox, 0, count), coords: map[string]float64{}}
	for i := 0; i < count; i++ {
		l, ok := line()
		if !ok {
			return nil, bad(fmt.Sprintf("want %d chunk lines, have %d", count, i))
		}
		c, err := cp.parse(l)
		if err != nil {
			return nil, bad(err.Error())
		}
		m.Chunks = append(m.Chunks, c)
	}
	if _, ok := line(); ok {
		return nil, bad("text after the last chunk line")
	}
	if lineErr != nil {
		return nil, lineErr
	}
	return m, nil
}

// maxLine bounds a manifest line.
const maxLine = 64 << 10

// chunkParser parses the chunk lines of one manifest.
type chunkParser struct {
	bboxes []geom.BBox        // backs the chunks' BBox pointers: one allocation, not one a line
	coords map[string]float64 // coordinates parsed so far (see spellings)
}

func (cp *chunkParser) parse(line string) (Chunk, error) {
	// strings.Cut rather than Split: a manifest of a few thousand tiles is
	// decoded on every commit of its file, and Split's slices were a third
	// of the time.
	var f [4]string
	n, rest := 0, line
	for ; n < len(f); n++ {
		var ok bool
		if f[n], rest, ok = strings.Cut(rest, " "); !ok {
			n++
			break
		}
	}
	if n == len(f) && rest != "" || n < 3 {
		return Chunk{}, fmt.Errorf("chunk line has %d fields", strings.Count(line, " ")+1)
	}
	var c Chunk
	var err error
	c.Key = f[0]
	if c.Size, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return c, fmt.Errorf("chunk size %q", f[1])
	}
	if c.ID, err = hashing.ParseID(f[2]); err != nil {
		return c, err
	}
	if n == 4 {
		var bb [4]float64
		rest := f[3]
		for i := range bb {
			p, r, ok := strings.Cut(rest, ",")
			if ok == (i == 3) {
				return c, fmt.Errorf("bbox %q", f[3])
			}
			if bb[i], err = cp.coord(p); err != nil {
				return c, fmt.Errorf("bbox %q", f[3])
			}
			rest = r
		}
		if len(cp.bboxes) == cap(cp.bboxes) {
			cp.bboxes = make([]geom.BBox, 0, 1024) // the earlier ones stay where they are
		}
		cp.bboxes = append(cp.bboxes, geom.FromArray(bb))
		c.BBox = &cp.bboxes[len(cp.bboxes)-1]
	}
	return c, nil
}

// coord parses one coordinate of a bbox.
func (cp *chunkParser) coord(p string) (float64, error) {
	if v, ok := cp.coords[p]; ok {
		return v, nil
	}
	v, err := strconv.ParseFloat(p, 64)
	if err != nil {
		return 0, err
	}
	if len(cp.coords) >= maxSpellings {
		clear(cp.coords)
	}
	cp.coords[p] = v
	return v, nil
}

// Normalize completes content keys (ending in "@") with the chunk's hash,
// merges lines that name the same chunk under the same key, and sorts.
// Distinct chunks under one key are an error. It works in chunks' memory,
// which the result shares (a copy would be 64 bytes a tile more at a
// commit's peak); callers hand over chunks.
func Normalize(chunks []Chunk) ([]Chunk, error) {
	// Content keys get 16 hex digits, or all 64 where 16 would collide.
	short := map[string]hashing.ID{}
	clash := map[string]bool{}
	for _, c := range chunks {
		if strings.HasSuffix(c.Key, "@") {
			k := c.Key + c.ID.String()[:16]
			if id, ok := short[k]; ok && id != c.ID {
				clash[k] = true
			}
			short[k] = c.ID
		}
	}
	out := chunks
	for i := range out {
		if c := &out[i]; strings.HasSuffix(c.Key, "@") {
			k := c.Key + c.ID.String()[:16]
			if clash[k] {
				k = c.Key + c.ID.String()
			}
			c.Key = k
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return NaturalLess(out[i].Key, out[j].Key) })
	w := 0
	for i, c := range out {
		if i > 0 && c.Key == out[w-1].Key {
			if c.ID != out[w-1].ID {
				return nil, fmt.Errorf("chunk key %q names two different chunks (%s, %s)", c.Key, out[w-1].ID.Short(), c.ID.Short())
			}
			continue
		}
		out[w] = c
		w++
	}
	return out[:w], nil
}

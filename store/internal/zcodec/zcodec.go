// Package zcodec is how the stores keep objects compressed: zstd for an
// object that compresses (decided on samples, after an entropy check that
// skips already-compressed tiles), and zstd deltas against a similar object
// in segments of packidx.DeltaSegment bytes, each with the matching part of
// the base as its dictionary.
package zcodec

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/chunkvc/chunkvc/store"
	"github.com/chunkvc/chunkvc/store/internal/packidx"
)

// Compression policy.
const (
	// sampleLen is how much of an object is test-compressed before the
	// whole is: most COG tiles are already compressed, and compressing
	// them in full would cost a cold commit its speed.
	sampleLen = 6 << 10
	// sampleRatio is the compressed fraction (in 1/100) a sample must
	// reach for the whole object to be compressed.
	sampleRatio = 85
	// MinSaving: a compressed or delta encoding is kept only when it saves
	// at least 1/minSaving of the raw size.
	MinSaving = 32
	// MinCompress: smaller objects are stored raw.
	MinCompress = 64
	// smallDelta: a delta whose dictionary and segment together fit here
	// (a changed tile and its old version) uses zstd's fastest level, a
	// larger one the better level (the faster match finders lose track in
	// larger dictionaries). On the changed tiles of LZW and DEFLATE COGs
	// the fastest level stores 0.7-1.2% more than the default level did,
	// for a third of the CPU time: its tables are a fifth the size, and an
	// encoder rebuilds them for every new dictionary.
	smallDelta = 384 << 10
	// smallWindow is the window of every small delta, a power of two of
	// at least smallDelta: one window size, so one kind of encoder.
	smallWindow = 512 << 10
)

var codec struct {
	once sync.Once
	enc  *zstd.Encoder // whole objects and their samples (see initCodec for the level)
	dec  *zstd.Decoder // frames without a dictionary
	err  error
}

// Bufs recycles encode buffers.
var Bufs = sync.Pool{New: func() any { return new([]byte) }}

func initCodec() error {
	codec.once.Do(func() {
		n := runtime.GOMAXPROCS(0)
		var errs [2]error
		// Whole objects at the fastest level: on FlatGeobuf feature blocks
		// it is 1.5 times as fast as the default level for 1% more bytes
		// (on CSV and Parquet no more), and a commit of compressible data
		// spends most of its CPU here. Deltas choose their own levels (see
		// smallDelta): an edit's bytes stored are what the benchmark rows
		// compare.
		codec.enc, errs[0] = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(n))
		codec.dec, errs[1] = zstd.NewReader(nil, zstd.WithDecoderConcurrency(n),
			zstd.WithDecodeAllCapLimit(true), zstd.WithDecoderMaxMemory(store.MaxObject))
		codec.err = errors.Join(errs[:]...)
	})
	return codec.err
}

// Compress returns data zstd-compressed, in *buf's storage (grown as
// needed), or nil when data is too small, looks already compressed, or
// would not save 1/MinSaving of its size. A sample decides cheaply for
// larger objects.
func Compress(data []byte, buf *[]byte) ([]byte, error) {
	if len(data) < MinCompress {
		return nil, nil
	}
	if err := initCodec(); err != nil {
		return nil, err
	}
	if len(data) > 2*sampleLen {
		// Three pieces from across the object.
		var sample [sampleLen]byte
		const piece = sampleLen / 3
		for i := 0; i < 3; i++ {
			at := (len(data) - piece) * (2*i + 1) / 6
			copy(sample[i*piece:], data[at:at+piece])
		}
		if entropy(sample[:]) > maxEntropy {
			return nil, nil // already compressed (LZW, DEFLATE, JPEG tiles): not even a trial
		}
		out := codec.enc.EncodeAll(sample[:], (*buf)[:0])
		*buf = out
		if len(out)*100 >= sampleLen*sampleRatio {
			return nil, nil
		}
	}
	out := codec.enc.EncodeAll(data, (*buf)[:0])
	*buf = out
	if len(out) > len(data)-len(data)/MinSaving {
		return nil, nil
	}
	return out, nil
}

// maxEntropy (bits per byte) marks a sample as already compressed: in
// 6 KiB windows sampled across every file of the test corpus, none above
// it compressed to better than sampleRatio with zstd. The histogram costs a fraction of a trial
// compression, and most COG tiles (median 7.95) stop there.
const maxEntropy = 7.8

// entropy is the order-0 entropy, in bits per byte, of every third byte of
// b (len(b) ≤ 3·entropyMax): enough to tell compressed bytes from others,
// at a third of the cost.
func entropy(b []byte) float64 {
	var h [256]uint32
	n := 0
	for i := 0; i < len(b); i += 3 {
		h[b[i]]++
		n++
	}
	if n == 0 || n > entropyMax {
		return 0
	}
	// H = log2 n − (1/n) Σ k·log2 k, with k·log2 k from a table.
	var sum float64
	for _, k := range h {
		sum += klogk[k]
	}
	return klogk[n]/float64(n) - sum/float64(n)
}

// entropyMax bounds the bytes entropy counts; klogk[k] = k·log2 k.
const entropyMax = sampleLen / 3

var klogk = func() (t [entropyMax + 1]float64) {
	for k := 2; k <= entropyMax; k++ {
		t[k] = float64(k) * math.Log2(float64(k))
	}
	return t
}()

// Decompress decodes one zstd frame of size raw bytes.
func Decompress(stored []byte, size int64) ([]byte, error) {
	if err := initCodec(); err != nil {
		return nil, err
	}
	out, err := codec.dec.DecodeAll(stored, make([]byte, 0, size))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) != size {
		return nil, fmt.Errorf("decoded %d bytes, want %d", len(out), size)
	}
	return out, nil
}

// deltaDict returns the dictionary of segment i of a delta against base.
func deltaDict(base []byte, i int) []byte {
	lo := min(max(i*packidx.DeltaSegment-packidx.DeltaMargin, 0), len(base))
	hi := min((i+1)*packidx.DeltaSegment+packidx.DeltaMargin, len(base))
	return base[lo:hi]
}

// EncodeDelta encodes data against base, or returns nil if the result would
// not be shorter than limit.
func EncodeDelta(data, base []byte, limit int) ([]byte, error) {
	if len(data) == 0 || len(base) == 0 {
		return nil, nil
	}
	first := min(len(data), packidx.DeltaSegment)
	span := len(deltaDict(base, 0)) + first
	if len(data) > packidx.DeltaSegment {
		span = max(span, len(deltaDict(base, 1))+min(len(data)-packidx.DeltaSegment, packidx.DeltaSegment))
	}
	// Small deltas share one window size, so that one encoder serves
	// tiles of any size: each size of its own would make another (a few
	// MiB, which were most of a re-commit's allocations).
	window := smallWindow
	level := zstd.SpeedFastest
	if span > smallDelta {
		level = zstd.SpeedBetterCompression
		for window < span && window < zstd.MaxWindowSize {
			window <<= 1
		}
	}
	key := deltaKey{level, window}
	deltaEncoders.acquire()
	defer deltaEncoders.release()
	enc := deltaEncoders.get(key)
	var out []byte
	for i := 0; i*packidx.DeltaSegment < len(data); i++ {
		seg := data[i*packidx.DeltaSegment : min((i+1)*packidx.DeltaSegment, len(data))]
		// A new dict value each time: the encoder rebuilds its tables
		// for a dictionary it has not seen (it compares them by address).
		dict := zstd.WithEncoderDictRaw(uint32(i+1), deltaDict(base, i))
		if len(deltaDict(base, i)) == 0 {
			dict = zstd.WithEncoderDictDelete()
		}
		var err error
		if enc == nil {
			encodersMade.Add(1)
			enc, err = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(level),
				zstd.WithWindowSize(window), dict)
		} else {
			err = enc.ResetWithOptions(nil, dict)
		}
		if err != nil {
			return nil, fmt.Errorf("delta encoder: %w", err)
		}
		out = enc.EncodeAll(seg, out)
		if len(out) >= limit {
			deltaEncoders.put(key, enc)
			return nil, nil
		}
	}
	deltaEncoders.put(key, enc)
	return out, nil
}

// deltaEncoders keeps idle delta encoders, by level and window size, for
// the life of the process: a new encoder allocates megabytes of tables,
// which cost a commit of a few changed tiles more than their encoding
// (1.8 ms of CPU a tile, against 0.4 ms reused), and a sync.Pool drops
// them at each of the several collections of a commit.
var deltaEncoders encoderCache

// encodersMade counts the delta encoders made (tests).
var encodersMade atomic.Int64

type deltaKey struct {
	level  zstd.EncoderLevel
	window int
}

// keepEncoders bounds the idle encoders kept per key, a few MiB each.
const keepEncoders = 4

// encoderCache also bounds the deltas encoded at once to GOMAXPROCS (the
// CPU is busy anyway): a commit whose scan workers all meet a changed tile
// would otherwise make an encoder for each.
type encoderCache struct {
	once  sync.Once
	slots chan struct{}
	mu    sync.Mutex
	idle  map[deltaKey][]*zstd.Encoder
}

func (c *encoderCache) acquire() {
	c.once.Do(func() { c.slots = make(chan struct{}, min(runtime.GOMAXPROCS(0), keepEncoders)) })
	c.slots <- struct{}{}
}

func (c *encoderCache) release() { <-c.slots }

// get returns an idle encoder of key, or nil when there is none.
func (c *encoderCache) get(key deltaKey) *zstd.Encoder {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.idle[key]
	if len(l) == 0 {
		return nil
	}
	enc := l[len(l)-1]
	c.idle[key] = l[:len(l)-1]
	return enc
}

// put keeps enc, which its caller no longer uses, unless key has enough.
func (c *encoderCache) put(key deltaKey, enc *zstd.Encoder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle == nil {
		c.idle = map[deltaKey][]*zstd.Encoder{}
	}
	if len(c.idle[key]) < keepEncoders {
		c.idle[key] = append(c.idle[key], enc)
	}
}

// DecodeDelta decodes a delta of size raw bytes against base.
func DecodeDelta(stored, base []byte, size int64) ([]byte, error) {
	n := int((size + packidx.DeltaSegment - 1) / packidx.DeltaSegment)
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(store.MaxObject)}
	for i := 0; i < n; i++ {
		if d := deltaDict(base, i); len(d) > 0 {
			opts = append(opts, zstd.WithDecoderDictRaw(uint32(i+1), d))
		}
	}
	dec, err := zstd.NewReader(nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("delta decoder: %w", err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(stored, make([]byte, 0, size))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) != size {
		return nil, fmt.Errorf("decoded %d bytes, want %d", len(out), size)
	}
	return out, nil
}

// Gate saves the trial compressions of a batch whose objects do not
// compress (a commit of LZW or JPEG tiles that the entropy check lets
// through: ~7% of its CPU time): once gateWarmup objects were tried and
// fewer than one in gateEvery paid off, only every gateEvery-th is tried.
// A trial that pays while the gate is closed opens it again at once (the
// counts start over), so compressible objects that follow a long run of
// incompressible ones lose at most gateEvery-1 of their number. A nil Gate
// tries everything.
type Gate struct {
	seen, tried, paid atomic.Int64
}

const (
	gateWarmup = 64
	gateEvery  = 16
)

// try reports whether to try compressing the next object.
func (g *Gate) try() bool {
	if g == nil {
		return true
	}
	n := g.seen.Add(1)
	return g.open() || n%gateEvery == 0
}

func (g *Gate) open() bool {
	t, p := g.tried.Load(), g.paid.Load()
	return t < gateWarmup || p*gateEvery >= t
}

// Compress is Compress, tried only when the gate says so (objects too small
// to compress are neither tried nor counted).
func (g *Gate) Compress(data []byte, buf *[]byte) ([]byte, error) {
	if len(data) < MinCompress || !g.try() {
		return nil, nil
	}
	z, err := Compress(data, buf)
	if err == nil {
		g.record(z != nil)
	}
	return z, err
}

// record counts a trial and whether it paid off.
func (g *Gate) record(paid bool) {
	if g == nil {
		return
	}
	if paid && !g.open() {
		g.tried.Store(0)
		g.paid.Store(0)
		return
	}
	g.tried.Add(1)
	if paid {
		g.paid.Add(1)
	}
}

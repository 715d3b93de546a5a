package codec

import (
	"errors"
	"fmt"
)

// MaxDecoded caps every buffer a decoder allocates for one chunk: a
// header or an encoded size that claims more is refused, never trusted.
const MaxDecoded = 256 << 20

// ErrUnsupported is what every *UnsupportedError matches with errors.Is:
// the chunk may be fine, this package just cannot decode it.
var ErrUnsupported = errors.New("unsupported")

// ErrCorrupt is what errors.Is finds when the stored bytes contradict
// themselves (a bad header, a short stream, a checksum mismatch).
var ErrCorrupt = errors.New("corrupt chunk")

// UnsupportedError names what this package cannot decode, so a caller can
// say "footprints left out: codec zfpy unsupported" and go on.
type UnsupportedError struct {
	Kind string // "codec", "filter", "data type", "blosc format", ...
	Name string // the name as the metadata spells it: "zfpy", "numcodecs.pcodec"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s %s unsupported", e.Kind, e.Name)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

func unsupported(kind, name string) error { return &UnsupportedError{Kind: kind, Name: name} }

// corruptf builds an error that matches ErrCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

package codec

// blosclzFar is the distance added to a 16-bit far-match offset.
const blosclzFar = 8191

// blosclzDecode decodes a BloscLZ stream (a FastLZ level-1 variant) into
// dst, which must come out exactly full.
//
// The stream is a sequence of instructions, each led by a control byte c
// (the first byte's top 3 bits are a format marker and read as 0):
//   - c < 32: a literal run of c+1 bytes follows.
//   - otherwise a match: length code L = c>>5 (7 means more length bytes
//     follow, each added, until one is not 255), then a byte d; the match
//     copies L+2 bytes from distance (c&31)<<8 + d + 1 back, or, when
//     (c&31) == 31 and d == 255, from a 16-bit big-endian offset that
//     follows plus 8191 + 1.
func blosclzDecode(dst, src []byte) error {
	if len(src) == 0 {
		return corruptf("blosclz: empty stream")
	}
	ip, op := 1, 0
	ctrl := int(src[0] & 31)
	for {
		if ctrl < 32 {
			n := ctrl + 1
			if n > len(src)-ip || n > len(dst)-op {
				return corruptf("blosclz: literal run of %d overruns", n)
			}
			op += copy(dst[op:], src[ip:ip+n])
			ip += n
		} else {
			length := ctrl>>5 - 1
			if length == 6 {
				for {
					if ip >= len(src) {
						return corruptf("blosclz: truncated match length")
					}
					code := int(src[ip])
					ip++
					length += code
					if length > len(dst) {
						return corruptf("blosclz: match overruns the block")
					}
					if code != 255 {
						break
					}
				}
			}
			if ip >= len(src) {
				return corruptf("blosclz: truncated match")
			}
			hi := (ctrl & 31) << 8
			code := int(src[ip])
			ip++
			dist := hi + code + 1
			if code == 255 && hi == 31<<8 {
				if ip+2 > len(src) {
					return corruptf("blosclz: truncated far match")
				}
				dist = int(src[ip])<<8 | int(src[ip+1]) + blosclzFar + 1
				ip += 2
			}
			length += 3
			if dist > op || length > len(dst)-op {
				return corruptf("blosclz: match at distance %d of %d bytes overruns", dist, length)
			}
			ref := op - dist
			for i := 0; i < length; i++ { // byte by byte: the source may overlap the copy
				dst[op+i] = dst[ref+i]
			}
			op += length
		}
		if ip >= len(src) {
			break
		}
		ctrl = int(src[ip])
		ip++
	}
	if op != len(dst) {
		return corruptf("blosclz: %d bytes decoded, want %d", op, len(dst))
	}
	return nil
}

package codec

// unshuffle undoes Blosc's byte shuffle of one block: the shuffled block
// holds byte 0 of every element, then byte 1 of every element, and so on;
// the bytes past the last whole element are stored as they are.
func unshuffle(dst, src []byte, typesize int) {
	n := len(src) / typesize
	for j := 0; j < typesize; j++ {
		plane := src[j*n : (j+1)*n]
		for i, b := range plane {
			dst[i*typesize+j] = b
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// bitunshuffle undoes Blosc's bit shuffle of one block. The shuffled block
// is typesize*8 rows of n/8 bytes, one row per bit of an element (byte 0
// bit 0 first, least significant bit first); bit i of a row, counted from
// the least significant bit of its first byte, belongs to element i. Only
// a whole multiple of 8 elements is shuffled; when the element count is
// not one, the block is stored as it is, and the bytes past the last
// whole element always are.
func bitunshuffle(dst, src []byte, typesize int) {
	n := len(src) / typesize
	if n%8 != 0 {
		copy(dst, src)
		return
	}
	row := n / 8
	whole := n * typesize
	clear(dst[:whole])
	for j := 0; j < typesize; j++ {
		for k := 0; k < 8; k++ {
			bits := src[(j*8+k)*row : (j*8+k+1)*row]
			mask := byte(1) << k
			for b, v := range bits {
				if v == 0 {
					continue
				}
				for t := 0; t < 8; t++ {
					if v&(1<<t) != 0 {
						dst[(b*8+t)*typesize+j] |= mask
					}
				}
			}
		}
	}
	copy(dst[whole:], src[whole:])
}

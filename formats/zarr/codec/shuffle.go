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
	// For byte j of elements 8b..8b+7: gather byte b of rows j*8..j*8+7
	// (row k in byte k of x), transpose that 8x8 bit matrix, and byte t
	// of the result is byte j of element 8b+t.
	for j := 0; j < typesize; j++ {
		rows := src[j*8*row : (j+1)*8*row]
		for b := 0; b < row; b++ {
			var x uint64
			for k := 0; k < 8; k++ {
				x |= uint64(rows[k*row+b]) << (8 * k)
			}
			x = transpose8(x)
			for t := 0; t < 8; t++ {
				dst[(8*b+t)*typesize+j] = byte(x >> (8 * t))
			}
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// transpose8 transposes the 8x8 bit matrix whose bit 8r+c is row r,
// column c: three rounds that swap ever larger off-diagonal blocks.
func transpose8(x uint64) uint64 {
	t := (x ^ (x >> 7)) & 0x00AA00AA00AA00AA
	x ^= t ^ (t << 7)
	t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCC
	x ^= t ^ (t << 14)
	t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0
	return x ^ t ^ (t << 28)
}

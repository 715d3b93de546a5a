//go:build race

package hashing

// Under the race detector, windows come from the Go heap, which it
// watches (it cannot see mapped memory), each one new, and a window given
// back is poisoned: a read after its release sees 0xEE bytes, a write
// races with the poisoning.

// getWindow returns a buffer of scanWindow bytes.
func getWindow() []byte { return make([]byte, scanWindow) }

// putWindow poisons a buffer from getWindow; nothing may use it after.
func putWindow(b []byte) {
	for i := range b {
		b[i] = 0xEE
	}
}

//go:build race

package hashing

// raceEnabled: under the race detector, sync.Pool drops items at random.
const raceEnabled = true

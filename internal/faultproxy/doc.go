// Package faultproxy is a loopback HTTP reverse proxy for tests that puts
// faults between a client and an upstream server (a MinIO endpoint).
//
// Start(t, upstream, seed) listens on 127.0.0.1 at a random port; point
// the client at Proxy.URL. Requests go to the upstream unchanged — Host
// header included, so S3 (SigV4) signatures made for the proxy's address
// still verify — unless a Rule fires. Rules are tried in the order they
// were added; the first one that matches a request (Method, Path prefix,
// Match) and fires (Fraction, Count) decides its fault:
//
//	Error        answer Status (default 503) with an S3 error document
//	             (SlowDown, InternalError, ...) without forwarding
//	ResetBefore  reset the client connection without forwarding
//	ResetAfter   forward, then reset the client connection unanswered
//	Delay        wait Delay before forwarding, or after After bytes of
//	             the answer's body when After > 0 (a stall)
//	Truncate     forward, send the first After bytes of the body, close
//	Throttle     forward, send the body at Rate bytes per second
//
// Faults are deterministic for a given seed and request order: which
// matching requests a Fraction rule hits comes from a seeded generator.
// Everything is bounded: a rule fires at most Count times (0: while it is
// installed), and every wait ends when the client goes away or the proxy
// closes, which t.Cleanup does when the test ends. Stats and Handle count
// the requests seen and the faults injected.
package faultproxy

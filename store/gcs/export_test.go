package gcs

import "net/http"

// SetTestTransport makes stores opened after it wrap their HTTP transport
// with wrap (nil: stop wrapping).
func SetTestTransport(wrap func(http.RoundTripper) http.RoundTripper) { testHookTransport = wrap }

// A program that uses an installed mixp from Go with nothing but this file
// and pkg-config: mixp.dev/mixp is the module `cmake --install` put in
// <prefix>/share/mixp/go (no proxy serves it), and cgo finds the headers and
// libmixp through mixp.pc (set PKG_CONFIG_PATH for a prefix other than
// /usr/local). Build: go build; run: ./mixp-consumer.
module example.com/mixp-consumer

go 1.19

require mixp.dev/mixp v0.6.0

replace mixp.dev/mixp => /usr/local/share/mixp/go

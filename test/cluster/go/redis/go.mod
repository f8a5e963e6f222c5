// Wrapper module: a tiny in-memory Redis (github.com/alicebob/miniredis/v2, the
// version already in Argo CD's module graph) for the test cluster's Argo CD.
module driftless.invalid/testcluster/redis

go 1.26.1

require github.com/alicebob/miniredis/v2 v2.39.0

require github.com/yuin/gopher-lua v1.1.1 // indirect

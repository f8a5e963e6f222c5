// Command redis serves an in-memory Redis (miniredis) on one loopback address
// for the test cluster's Argo CD, which cannot run without a Redis. It exits on
// SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alicebob/miniredis/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "address to listen on")
	flag.Parse()

	server := miniredis.NewMiniRedis()
	if err := server.StartAddr(*addr); err != nil {
		fmt.Fprintf(os.Stderr, "redis: %v\n", err)
		os.Exit(1)
	}
	// The harness waits for this line before starting the Argo CD components.
	fmt.Printf("redis: listening on %s\n", server.Addr())

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	server.Close()
}

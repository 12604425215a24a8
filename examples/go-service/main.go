// go-service: an HTTP service that trains mixp models in the background.
//
//	POST   /jobs       {"model":"mlp","amp":"O1","epochs":2} starts a job
//	GET    /jobs/{id}  step, loss, loss scale, samples/s, state
//	DELETE /jobs/{id}  cancels the job (it stops between two steps)
//	GET    /metrics    Prometheus text format
//
// SIGINT/SIGTERM shut it down gracefully: no new requests, in-flight ones
// finish, running jobs are cancelled and release their mixp objects.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Run serves on ln until ctx is cancelled, then shuts down gracefully.
func Run(ctx context.Context, ln net.Listener) error {
	sv := NewService()
	srv := &http.Server{Handler: sv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		sv.Close()
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	sv.Close()
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("mixp go-service on http://%s", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, ln); err != nil {
		log.Fatal(err)
	}
	log.Print("shut down")
}

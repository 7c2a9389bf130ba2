// Command healthcheck exits 0 when an HTTP URL answers 200 OK, and 1
// otherwise, with the reason on stderr. The Sediment image runs it in its
// container healthchecks (`healthcheck http://127.0.0.1:9180/ready`): the
// image is distroless, with no shell, curl or wget.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 5*time.Second, "Deadline of the request.")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "Usage: healthcheck [-timeout d] URL")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := check(ctx, http.DefaultClient, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

// check GETs url and returns nil on 200, else an error with the status and
// the start of the body (/ready lists the parts that are not ready).
func check(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return errors.New(url + ": " + resp.Status + ": " + string(body))
	}
	return nil
}

// Command e2e measures the gateway as an operator runs it: the fake
// upstream, the gateway's binary, a bare httputil.ReverseProxy (flushed per
// read) and, if installed, nginx, each its own process on loopback. The
// same ~2 KB answer in about 520 tiny deltas goes through each proxy and
// each door, interleaved, round after round. It reports req/s, first byte,
// CPU time per request against the fake's and the bare proxy's (from
// /proc: steadier than req/s on a shared machine), new upstream
// connections and read and write system calls per request.
//
//	go run ./bench/e2e
//
// To measure a change, run the gateway before it side by side in one run,
// where a shared machine's noise touches both alike:
//
//	git stash && go build -o /tmp/before . && git stash pop
//	go run ./bench/e2e -compare /tmp/before
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"cursor2api/bench/loadgen"
	"cursor2api/services/cursortest"
)

func main() {
	role := flag.String("role", "", "internal: fake or proxy (the program re-runs itself as each)")
	upstream := flag.String("upstream", "", "internal: the proxy's upstream")
	concs := flag.String("c", "1,50,500", "concurrencies, comma-separated")
	scale := flag.Float64("scale", 1, "multiplies the number of requests per cell")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	only := flag.String("only", "", "run only the targets whose names contain one of these comma-separated words (proxy, nginx, openai, anthropic, responses, gemini)")
	cpuProfile := flag.String("cpuprofile", "", "write the gateway's CPU profile over the whole run to this file (builds it with -tags benchprofile)")
	compare := flag.String("compare", "", "a gateway binary built from another revision, measured beside this one in the same run (its rows are named \"compare <door>\")")
	flag.Parse()
	var err error
	switch *role {
	case "fake":
		err = runFake()
	case "proxy":
		err = runProxy(*upstream)
	case "":
		err = run(options{concs: *concs, scale: *scale, rounds: *rounds, only: *only, cpuProfile: *cpuProfile, compare: *compare})
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

// requests is how many requests one cell sends at a concurrency.
func requests(conc int, scale float64) int {
	n := map[int]int{1: 300, 50: 1500, 500: 3000}[conc]
	if n == 0 {
		n = 30 * conc
	}
	return max(conc, int(float64(n)*scale))
}

// prompt is the ~2 KB user message every request carries.
var prompt = strings.Repeat("Summarise the design of a small HTTP gateway. ", 45)

// target is one way to ask for the answer: through the bare proxy (the
// upstream's own request and frames) or through a door of the gateway.
type target struct {
	name string
	proc string // "proxy" or "gateway": whose CPU is counted
	path string
	body []byte
	// content reports whether an event's data carries answer text.
	content func(data []byte) bool
}

func targets() []target {
	q := strconv.Quote(prompt)
	return []target{
		{"bare Go proxy", "proxy", "/api/chat",
			fmt.Appendf(nil, `{"model":"claude-sonnet-4.6","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":%s}]}]}`, q),
			func(d []byte) bool { return gjson.GetBytes(d, "type").String() == "text-delta" }},
		{"gateway openai", "gateway", "/v1/chat/completions",
			fmt.Appendf(nil, `{"model":"claude-sonnet-4.6","stream":true,"messages":[{"role":"user","content":%s}]}`, q),
			func(d []byte) bool { return gjson.GetBytes(d, "choices.0.delta.content").String() != "" }},
		{"gateway anthropic", "gateway", "/v1/messages",
			fmt.Appendf(nil, `{"model":"claude-sonnet-4.6","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":%s}]}`, q),
			func(d []byte) bool { return gjson.GetBytes(d, "delta.text").String() != "" }},
		{"gateway responses", "gateway", "/v1/responses",
			fmt.Appendf(nil, `{"model":"claude-sonnet-4.6","stream":true,"input":%s}`, q),
			func(d []byte) bool {
				return gjson.GetBytes(d, "type").String() == "response.output_text.delta" && gjson.GetBytes(d, "delta").String() != ""
			}},
		{"gateway gemini", "gateway", "/v1beta/models/claude-sonnet-4.6:streamGenerateContent?alt=sse",
			fmt.Appendf(nil, `{"contents":[{"role":"user","parts":[{"text":%s}]}]}`, q),
			func(d []byte) bool { return gjson.GetBytes(d, "candidates.0.content.parts.0.text").String() != "" }},
	}
}

// cell sums one target's measures at one concurrency over the rounds.
type cell struct {
	ttfbs         []time.Duration
	n             int
	wall          time.Duration
	cpu, fakeCPU  time.Duration
	upstreamConns int64
	reads, writes int64 // the process's read and write system calls
	errors        int
	firstErr      error
}

// options are the flags of a measuring run.
type options struct {
	concs      string
	scale      float64
	rounds     int
	only       string
	cpuProfile string
	compare    string // another gateway binary, or ""
}

// selected reports whether a target is asked for by -only.
func (o options) selected(t target) bool {
	if o.only == "" {
		return true
	}
	for _, w := range strings.Split(o.only, ",") {
		if w = strings.TrimSpace(w); w != "" && strings.Contains(t.name, w) {
			return true
		}
	}
	return false
}

func run(o options) error {
	var concs []int
	for _, f := range strings.Split(o.concs, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return fmt.Errorf("-c: %q is not a concurrency", f)
		}
		concs = append(concs, c)
	}
	dir, err := os.MkdirTemp("", "cursor2api-e2e")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cursor2api")
	args := []string{"build", "-o", bin}
	if o.cpuProfile != "" {
		args = append(args, "-tags", "benchprofile")
	}
	build := exec.Command("go", append(args, "cursor2api")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the gateway: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fake, fakeURL, err := startChild(ctx, exec.CommandContext(ctx, self, "-role=fake"))
	if err != nil {
		return fmt.Errorf("starting the fake: %w", err)
	}
	defer stop(fake)
	proxy, proxyURL, err := startChild(ctx, exec.CommandContext(ctx, self, "-role=proxy", "-upstream="+fakeURL))
	if err != nil {
		return fmt.Errorf("starting the proxy: %w", err)
	}
	defer stop(proxy)
	gw, gwURL, err := startGateway(ctx, bin, filepath.Join(dir, "state"), fakeURL, o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop(gw)
	pids := map[string]func() []int{
		"proxy":   func() []int { return []int{proxy.Process.Pid} },
		"gateway": func() []int { return []int{gw.Process.Pid} },
	}
	bases := map[string]string{"proxy": proxyURL, "gateway": gwURL}
	ts := targets()
	if o.compare != "" {
		other, otherURL, err := startGateway(ctx, o.compare, filepath.Join(dir, "state-compare"), fakeURL, "")
		if err != nil {
			return fmt.Errorf("-compare: %w", err)
		}
		defer stop(other)
		pids["compare"] = func() []int { return []int{other.Process.Pid} }
		bases["compare"] = otherURL
		// Each door's row of the other binary follows this one's.
		for i := len(ts) - 1; i >= 0; i-- {
			if t := ts[i]; t.proc == "gateway" {
				t.name, t.proc = strings.Replace(t.name, "gateway", "compare", 1), "compare"
				ts = slices.Insert(ts, i+1, t)
			}
		}
	}
	if ng, ngURL, err := startNginx(ctx, dir, fakeURL); err != nil {
		return fmt.Errorf("starting nginx: %w", err)
	} else if ng != nil {
		defer stop(ng)
		// nginx's CPU is its workers'; the master only watches them.
		pids["nginx"] = func() []int { return append(childrenOf(ng.Process.Pid), ng.Process.Pid) }
		bases["nginx"] = ngURL
		ts = slices.Insert(ts, 1, target{"nginx", "nginx", ts[0].path, ts[0].body, ts[0].content})
	} else {
		fmt.Fprintln(os.Stderr, "e2e: nginx is not installed; its rows are left out")
	}
	ts = slices.DeleteFunc(ts, func(t target) bool { return !o.selected(t) })
	if len(ts) == 0 {
		return fmt.Errorf("-only %q selects no target", o.only)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, DisableCompression: true}}
	cells := map[string]*cell{}
	key := func(t target, c int) string { return t.name + "/" + strconv.Itoa(c) }
	fmt.Fprintf(os.Stderr, "e2e: %d rounds of %d targets at c=%s\n", o.rounds, len(ts), o.concs)
	for range o.rounds {
		for _, c := range concs {
			for _, t := range ts {
				conns0, err := warm(client, bases[t.proc]+t.path, t, c, fakeURL)
				if err != nil {
					return err
				}
				cpu0, fcpu0 := cpuTime(pids[t.proc]()...), cpuTime(fake.Process.Pid)
				r0, w0 := syscalls(pids[t.proc]()...)
				res, err := load(client, bases[t.proc]+t.path, t, c, requests(c, o.scale))
				cpu1, fcpu1 := cpuTime(pids[t.proc]()...), cpuTime(fake.Process.Pid)
				r1, w1 := syscalls(pids[t.proc]()...)
				conns1, cerr := fakeConns(client, fakeURL)
				if cerr != nil {
					return cerr
				}
				ce := cells[key(t, c)]
				if ce == nil {
					ce = &cell{}
					cells[key(t, c)] = ce
				}
				ce.ttfbs = append(ce.ttfbs, res.ttfbs...)
				ce.n += len(res.ttfbs)
				ce.wall += res.wall
				ce.cpu += cpu1 - cpu0
				ce.fakeCPU += fcpu1 - fcpu0
				ce.upstreamConns += conns1 - conns0
				ce.reads += r1 - r0
				ce.writes += w1 - w0
				if err != nil {
					ce.errors++
					if ce.firstErr == nil {
						ce.firstErr = err
					}
				}
			}
		}
	}
	if o.cpuProfile != "" {
		// The gateway ends its profile on SIGUSR2; stop's interrupt follows.
		_ = gw.Process.Signal(syscall.SIGUSR2)
		time.Sleep(500 * time.Millisecond)
	}
	report(os.Stdout, ts, concs, cells, key)
	return nil
}

// startGateway starts bin on the fake with default settings except what a
// measure needs (one model, no connection cap, warnings only), its state
// log in stateDir and, if set, a benchprofile CPU profile at profile. It
// returns once /health answers.
func startGateway(ctx context.Context, bin, stateDir, fakeURL, profile string) (*exec.Cmd, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		return nil, "", err
	}
	gw := exec.CommandContext(ctx, bin)
	gw.Env = append(os.Environ(), "CURSOR_API_URL="+fakeURL+"/api/chat", "X_IS_HUMAN_MODE=static:bench", "LOG_LEVEL=warn",
		"MAX_CONNECTIONS=10000", "MODELS=claude-sonnet-4.6", "STATE_DIR="+stateDir, "HOST=127.0.0.1", "PORT="+strconv.Itoa(port))
	if profile != "" {
		abs, err := filepath.Abs(profile)
		if err != nil {
			return nil, "", err
		}
		gw.Env = append(gw.Env, "CURSOR2API_CPUPROFILE="+abs)
	}
	gw.Stderr = os.Stderr
	if err := gw.Start(); err != nil {
		return nil, "", fmt.Errorf("starting the gateway %s: %w", bin, err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitUp(url + "/health"); err != nil {
		stop(gw)
		return nil, "", err
	}
	return gw, url, nil
}

// report prints the table, and the failures under it.
func report(w io.Writer, ts []target, concs []int, cells map[string]*cell, key func(target, int) string) {
	fmt.Fprintf(w, "| target | c | requests | req/s | first byte p50 | p99 | CPU per request | / fake's | × bare proxy's | new upstream connections per request | reads, writes per request |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	var failures []string
	for _, c := range concs {
		var base float64
		for _, t := range ts {
			ce := cells[key(t, c)]
			ratio, vsProxy, cpu := "n/a", "—", "n/a"
			if ce.n > 0 {
				cpu = fmt.Sprintf("%d µs", (ce.cpu / time.Duration(ce.n)).Microseconds())
			}
			if ce.fakeCPU > 0 {
				r := float64(ce.cpu) / float64(ce.fakeCPU)
				ratio = fmt.Sprintf("%.2f", r)
				if t.proc == "proxy" {
					base = r
				} else if base > 0 {
					vsProxy = fmt.Sprintf("%.2f×", r/base)
				}
			}
			conns := "n/a"
			if ce.n > 0 {
				conns = fmt.Sprintf("%.1f %%", 100*float64(ce.upstreamConns)/float64(ce.n))
			}
			calls := "n/a"
			if ce.n > 0 && ce.reads+ce.writes > 0 {
				calls = fmt.Sprintf("%.0f, %.0f", float64(ce.reads)/float64(ce.n), float64(ce.writes)/float64(ce.n))
			}
			fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", t.name, c, ce.n, float64(ce.n)/ce.wall.Seconds(),
				ms(loadgen.Percentile(ce.ttfbs, 50)), ms(loadgen.Percentile(ce.ttfbs, 99)), cpu, ratio, vsProxy, conns, calls)
			if ce.firstErr != nil {
				failures = append(failures, fmt.Sprintf("%s at c=%d: %d failed runs, the first: %v", t.name, c, ce.errors, ce.firstErr))
			}
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(failures, "\n"))
	}
}

// warmPasses bounds the passes of warm.
const warmPasses = 5

// warm opens concurrency c's connections before the measure, as on a
// running gateway, and returns the fake's count of accepted connections.
// One pass may not have c in flight at once, so warm repeats while a pass
// opened any, at most warmPasses times.
func warm(client *http.Client, u string, t target, c int, fakeURL string) (int64, error) {
	n, err := fakeConns(client, fakeURL)
	if err != nil {
		return 0, err
	}
	for range warmPasses {
		if _, err := load(client, u, t, c, c); err != nil {
			return 0, fmt.Errorf("%s at c=%d: %w", t.name, c, err)
		}
		m, err := fakeConns(client, fakeURL)
		if err != nil {
			return 0, err
		}
		if m == n {
			break
		}
		n = m
	}
	return n, nil
}

// result is one load's timings.
type result struct {
	ttfbs []time.Duration
	wall  time.Duration
}

// load sends n requests from conc workers, each read to the end of its
// stream; a worker stops at its first failure.
func load(client *http.Client, u string, t target, conc, n int) (result, error) {
	ttfbs, wall, err := loadgen.Run(conc, n, func() (time.Duration, error) { return once(client, u, t) })
	return result{ttfbs: ttfbs, wall: wall}, err
}

// once sends one request and reads its event stream to the end, timing
// the first event that carries answer text.
func once(client *http.Client, u string, t target) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(t.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var ttfb time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if ok && ttfb == 0 && t.content(data) {
			ttfb = time.Since(start)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if ttfb == 0 {
		return 0, errors.New("the stream ended without answer text")
	}
	return ttfb, nil
}

// answerDeltas is the streamed answer: ~2 KB in about 520 deltas of 2 to
// 6 bytes, as a model's tokens come.
func answerDeltas() []string {
	words := strings.Fields("the gateway reads each frame of the upstream and writes it to the client at once so that no byte waits")
	var out []string
	size := 0
	for i := 0; size < 2048; i++ {
		w := words[i%len(words)]
		if i%2 == 1 {
			w = " " + w
		}
		for len(w) > 6 { // no delta over 6 bytes
			out, size, w = append(out, w[:4]), size+4, w[4:]
		}
		out = append(out, w)
		size += len(w)
	}
	return out
}

// runFake is -role=fake: the web chat's frames for every POST, one frame
// per write and flush as the real upstream streams them; GET /conns is
// the number of connections it accepted.
func runFake() error {
	events := cursortest.Frames(&cursortest.Usage{Input: 500, Output: 520}, nil, answerDeltas())
	frames := make([][]byte, len(events))
	for i, ev := range events {
		frames[i] = []byte("data: " + ev + "\n\n")
	}
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /conns", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, conns.Load()) })
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		flusher := w.(http.Flusher)
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return
			}
			flusher.Flush()
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	return serveUntilStdinCloses(srv)
}

// runProxy is -role=proxy: newProxy on a loopback port.
func runProxy(upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return fmt.Errorf("-upstream %q is not a URL", upstream)
	}
	proxy := newProxy(u, &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000})
	return serveUntilStdinCloses(&http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second})
}

// newProxy is a bare pass-through to upstream, flushed after every read.
// It is full duplex: otherwise the HTTP/1 server closes the request body
// once the answer's header is out, the transport's final read of the body
// fails ("invalid Read on closed Body") and the upstream connection is
// dropped (go.dev/issue/40747).
func newProxy(upstream *url.URL, transport http.RoundTripper) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.FlushInterval = -1
	rp.Transport = transport
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, "e2e proxy: full duplex: "+err.Error(), http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// serveUntilStdinCloses serves srv on a loopback port, printed on stdout,
// until the parent closes stdin.
func serveUntilStdinCloses(srv *http.Server) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println("http://" + ln.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startChild starts cmd and reads the URL it prints first; closing its
// stdin (stop) ends it.
func startChild(ctx context.Context, cmd *exec.Cmd) (*exec.Cmd, string, error) {
	if _, err := cmd.StdinPipe(); err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, "", fmt.Errorf("reading its address: %w", err)
	}
	return cmd, strings.TrimSpace(line), ctx.Err()
}

// stop ends a child: an interrupt (the gateway shuts down gracefully;
// the others end when their stdin closes with it), then a kill after 5 s.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitUp waits (at most 30 s) for a server to answer u.
func waitUp(u string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("nothing answered on %s within 30 s", u)
}

func fakeConns(client *http.Client, base string) (int64, error) {
	resp, err := client.Get(base + "/conns")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err
}

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the user and system CPU time of processes, from /proc; 0
// where /proc is missing.
func cpuTime(pids ...int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		f := statFields(pid)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		sum += time.Duration(u+s) * clockTick
	}
	return sum
}

// syscalls counts the read and write system calls of processes, from
// /proc/<pid>/io (0, 0 where it is not readable).
func syscalls(pids ...int) (reads, writes int64) {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "syscr":
				reads += n
			case "syscw":
				writes += n
			}
		}
	}
	return reads, writes
}

// statFields are the fields of /proc/<pid>/stat after the command name
// (in parentheses, which may hold spaces): the state is the first, the
// parent's pid the second, utime and stime the 12th and 13th.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
}

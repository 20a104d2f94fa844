// Command bench measures the gateway's overhead against its upstream in one
// run: an in-process fake upstream in the real frame format, asked directly
// and through each door of an in-process gateway run by package server, as
// the command runs it. For a ~2 KB answer in small deltas and a 1 MB
// answer, at concurrency 1, 50 and 500, it reports time to first content
// byte (p50, p99), mean total time and requests per second against direct;
// then the peak RSS of a gateway process holding 1,000 open streams. The
// native back door (native.go) is measured the same way, with turns parked
// at their tool calls. With -states it compares the state engines.
//
// Everything stays on loopback and every loop has a fixed number of
// requests:
//
//	go run ./bench
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/tidwall/gjson"

	"cursor2api/bench/loadgen"
	"cursor2api/config"
	"cursor2api/handlers/server"
	"cursor2api/services/cursortest"
)

// door is one front door of the gateway, as the benchmark drives it.
type door struct {
	name string
	path string
	// body is a streamed request for model asking for the answer.
	body func(model string) []byte
	// content reports whether the data of an event carries answer text.
	content func(data []byte) bool
	// done reports whether the data of an event ends the stream.
	done func(data []byte) bool
}

// doors are the front doors measured. Adding a door is adding an entry.
var doors = []door{
	{
		name: "openai",
		path: "/v1/chat/completions",
		body: func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model)
		},
		content: func(data []byte) bool { return gjson.GetBytes(data, "choices.0.delta.content").String() != "" },
		done:    dataDone,
	},
	{
		name: "anthropic",
		path: "/v1/messages",
		body: func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model)
		},
		content: func(data []byte) bool { return gjson.GetBytes(data, "delta.text").String() != "" },
		done:    func(data []byte) bool { return gjson.GetBytes(data, "type").String() == "message_stop" },
	},
	{
		name: "responses",
		path: "/v1/responses",
		body: func(model string) []byte {
			return fmt.Appendf(nil, `{"model":%q,"stream":true,"input":"hi"}`, model)
		},
		content: func(data []byte) bool {
			return gjson.GetBytes(data, "type").String() == "response.output_text.delta" && gjson.GetBytes(data, "delta").String() != ""
		},
		done: func(data []byte) bool { return gjson.GetBytes(data, "type").String() == "response.completed" },
	},
}

// answer is one reply shape of the fake upstream.
type answer struct {
	name   string
	deltas []string
	// requests is how many requests to send at each concurrency.
	requests map[int]int
}

func answers() []answer {
	small := make([]string, 200) // ~2 KB in 200 deltas of ~10 bytes
	for i := range small {
		small[i] = fmt.Sprintf("word%05d ", i)
	}
	big := make([]string, 4096) // 1 MB in deltas of 256 bytes
	chunk := strings.Repeat("abcdefgh", 32)
	for i := range big {
		big[i] = chunk
	}
	return []answer{
		{name: "2KB/200 deltas", deltas: small, requests: map[int]int{1: 400, 50: 2000, 500: 4000}},
		{name: "1MB/4096 deltas", deltas: big, requests: map[int]int{1: 30, 50: 150, 500: 500}},
	}
}

func main() {
	role := flag.String("role", "", "internal: \"gateway\" runs only a gateway (for the RSS measure)")
	upstreamURL := flag.String("upstream", "", "internal: the upstream of -role=gateway")
	scale := flag.Float64("scale", 1, "multiplies every request count (0.1 for a quick run)")
	streams := flag.Int("streams", 1000, "open streams for the RSS measure (0: skip)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the throughput runs to this file")
	heapProfile := flag.String("heapprofile", "", "write a heap profile of the gateway process holding the open streams to this file")
	only := flag.String("only", "", "run only the answers whose name starts with this")
	states := flag.String("states", "", "then compare state engines: STATE_URLs separated by spaces (file: the embedded file in a temporary STATE_DIR), e.g. \"memory: file redis://127.0.0.1:6379/0\"")
	nativeOn := flag.Bool("native", true, "measure the native back door too (with -role=gateway: the gateway's back door is the native one)")
	parked := flag.Int("parked", 1000, "turns parked at tool calls for the native memory measure (0: skip)")
	parkMax := flag.Int("park-max", 0, "internal: CURSOR_PARK_MAX of -role=gateway -native")
	transport := flag.String("transport", "http2", "internal: CURSOR_TRANSPORT of -role=gateway -native")
	flag.Parse()
	gin.SetMode(gin.ReleaseMode)
	if *role == "gateway" {
		env := gatewayEnv(*upstreamURL)
		if *nativeOn {
			env = nativeEnv(*upstreamURL, *transport, *parkMax)
		}
		if err := runGatewayChild(env); err != nil {
			fmt.Fprintln(os.Stderr, "bench gateway:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*scale, *streams, *cpuProfile, *heapProfile, *only, *nativeOn, *parked); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if *states != "" {
		if err := compareStates(strings.Fields(*states), *scale); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

func run(scale float64, streams int, cpuProfile, heapProfile, only string, nativeOn bool, parked int) error {
	up, err := startFake()
	if err != nil {
		return err
	}
	defer up.Close()
	gwURL, stopGateway, err := startGatewayEnv(gatewayEnv(up.url + "/api/chat"))
	if err != nil {
		return err
	}
	defer stopGateway()

	fmt.Printf("cursor2api bench: %s, %d CPUs, GOMAXPROCS=%d, %s\n\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, DisableCompression: true}}
	fmt.Printf("%-16s %-7s %5s %6s | %9s %9s %9s %9s | %9s %9s %9s %9s | %7s %7s %8s\n",
		"answer", "door", "conc", "reqs", "ttfb p50", "ttfb p99", "total", "req/s", "ttfb p50", "ttfb p99", "total", "req/s", "req/s %", "total %", "+ttfb")
	fmt.Printf("%-16s %-7s %5s %6s | %-39s | %-39s |\n", "", "", "", "", "direct to the fake upstream", "through the door")
	for _, a := range answers() {
		if !strings.HasPrefix(a.name, only) {
			continue
		}
		up.setDeltas(a.deltas)
		for _, conc := range []int{1, 50, 500} {
			n := max(conc, int(float64(a.requests[conc])*scale))
			direct := target{url: up.url + "/api/chat", body: upstreamBody, content: upstreamContent, done: dataDone}
			// Warm up both sides' connection pools and code paths.
			if _, err := load(client, direct, conc, conc); err != nil {
				return err
			}
			d, err := load(client, direct, conc, n)
			if err != nil {
				return fmt.Errorf("direct, %s, concurrency %d: %w", a.name, conc, err)
			}
			for _, dr := range doors {
				via := target{url: gwURL + dr.path, body: dr.body("claude-sonnet-4.6"), content: dr.content, done: dr.done}
				if _, err := load(client, via, conc, conc); err != nil {
					return err
				}
				g, err := load(client, via, conc, n)
				if err != nil {
					return fmt.Errorf("%s door, %s, concurrency %d: %w", dr.name, a.name, conc, err)
				}
				printRow(a.name, dr.name, conc, n, d, g)
			}
		}
	}
	if nativeOn && strings.HasPrefix("native", only) {
		if err := runNative(client, scale, parked, heapProfile); err != nil {
			return err
		}
	}
	client.CloseIdleConnections()
	if streams > 0 {
		fmt.Println()
		for _, dr := range doors {
			if err := measureRSS(up, dr, streams, heapProfile); err != nil {
				return fmt.Errorf("RSS with %d streams: %w", streams, err)
			}
		}
	}
	return nil
}

// printRow prints one line of the table: direct d and through the door g.
func printRow(answer, door string, conc, n int, d, g result) {
	fmt.Printf("%-16s %-7s %5d %6d | %9s %9s %9s %9.1f | %9s %9s %9s %9.1f | %6.0f%% %6.0f%% %8s\n",
		answer, door, conc, n,
		ms(d.ttfb(50)), ms(d.ttfb(99)), ms(d.meanTotal()), d.rate(),
		ms(g.ttfb(50)), ms(g.ttfb(99)), ms(g.meanTotal()), g.rate(),
		100*g.rate()/d.rate(), 100*float64(d.meanTotal())/float64(g.meanTotal()), ms(g.ttfb(50)-d.ttfb(50)))
}

// upstreamBody is what the gateway sends upstream, near enough.
var upstreamBody = []byte(`{"context":[],"model":"anthropic/claude-sonnet-4.6","id":"x","messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`)

func upstreamContent(data []byte) bool { return gjson.GetBytes(data, "type").String() == "text-delta" }

// target is one endpoint under load.
type target struct {
	url     string
	body    []byte
	content func([]byte) bool
	done    func([]byte) bool
}

// dataDone is the end of an OpenAI-style stream (and of the upstream's).
func dataDone(data []byte) bool { return bytes.Equal(data, []byte("[DONE]")) }

// result holds the timings of one load run.
type result struct {
	ttfbs, totals []time.Duration
	wall          time.Duration
}

func (r result) ttfb(p int) time.Duration { return loadgen.Percentile(r.ttfbs, p) }
func (r result) rate() float64            { return float64(len(r.totals)) / r.wall.Seconds() }
func (r result) meanTotal() time.Duration {
	var sum time.Duration
	for _, t := range r.totals {
		sum += t
	}
	return sum / time.Duration(max(1, len(r.totals)))
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// load sends n streamed requests from conc workers and times each.
func load(client *http.Client, t target, conc, n int) (result, error) {
	return loadFunc(conc, n, func() (time.Duration, time.Duration, error) { return once(client, t) })
}

// loadFunc runs once n times from conc workers and keeps its timings.
func loadFunc(conc, n int, once func() (ttfb, total time.Duration, err error)) (result, error) {
	type timing struct{ ttfb, total time.Duration }
	timings, wall, err := loadgen.Run(conc, n, func() (timing, error) {
		ttfb, total, err := once()
		return timing{ttfb, total}, err
	})
	res := result{wall: wall}
	for _, t := range timings {
		res.ttfbs = append(res.ttfbs, t.ttfb)
		res.totals = append(res.totals, t.total)
	}
	return res, err
}

// once sends one request and reads its event stream to [DONE], timing
// the first content event and the whole answer.
func once(client *http.Client, t target) (ttfb, total time.Duration, err error) {
	start := time.Now()
	resp, err := client.Post(t.url, "application/json", bytes.NewReader(t.body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if t.done(data) {
			if ttfb == 0 {
				return 0, 0, fmt.Errorf("no content before the end of the stream")
			}
			return ttfb, time.Since(start), nil
		}
		if ttfb == 0 && t.content(data) {
			ttfb = time.Since(start)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, fmt.Errorf("the stream ended without its last event")
}

// fake is the in-process fake upstream: every POST gets the current
// answer as fast as it can be written, one frame per write and flush, as
// the real upstream streams; /hold sends the first delta and holds the
// stream open until released.
type fake struct {
	url    string
	srv    *http.Server
	frames atomic.Pointer[[][]byte]
	hold   chan struct{}
}

func startFake() (*fake, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fake{url: "http://" + ln.Addr().String(), hold: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

func (f *fake) Close() { _ = f.srv.Close() }

func (f *fake) setDeltas(deltas []string) {
	events := cursortest.Frames(&cursortest.Usage{Input: 10, Output: len(deltas)}, nil, deltas)
	frames := make([][]byte, len(events))
	for i, ev := range events {
		frames[i] = []byte("data: " + ev + "\n\n")
	}
	f.frames.Store(&frames)
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	if strings.HasSuffix(r.URL.Path, "/hold") {
		fmt.Fprint(w, "data: {\"type\":\"text-start\",\"id\":\"t0\"}\n\ndata: {\"type\":\"text-delta\",\"id\":\"t0\",\"delta\":\"held\"}\n\n")
		flusher.Flush()
		select {
		case <-f.hold:
		case <-r.Context().Done():
		}
		return
	}
	for _, fr := range *f.frames.Load() {
		if _, err := w.Write(fr); err != nil {
			return
		}
		flusher.Flush()
	}
}

// gatewayEnv is the configuration of the measured gateway: the defaults,
// as a new user runs it, pointed at the fake. A static x-is-human sends a
// fixed value without fetching the challenge script.
func gatewayEnv(upstream string) map[string]string {
	return map[string]string{"CURSOR_API_URL": upstream, "X_IS_HUMAN_MODE": "static:bench", "LOG_LEVEL": "warn", "MAX_CONNECTIONS": "10000",
		"MODELS": "claude-sonnet-4.6", "STATE_URL": "memory:"} // the fake accepts any model: nothing to learn
}

// startGatewayEnv serves the gateway env configures on loopback as main
// does, through server: the same handler, limits and shutdown. stop shuts
// it down.
func startGatewayEnv(env map[string]string) (url string, stop func(), err error) {
	cfg, err := config.FromMap(env)
	if err != nil {
		return "", nil, err
	}
	srv, err := server.New(cfg, server.NewLogger(cfg, os.Stderr), server.Options{Version: "bench"})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "bench gateway:", err)
		}
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// startGateway is startGatewayEnv on the fake web chat at upstream, with
// env on top of the bench's settings.
func startGateway(upstream string, env map[string]string) (url string, stop func(), err error) {
	vars := gatewayEnv(upstream)
	maps.Copy(vars, env)
	return startGatewayEnv(vars)
}

// startGatewayChild runs the bench again as -role=gateway with args: a
// gateway alone in its process, for the memory measures. It returns the
// process, its stdin for commands, its stdout for their answers, the
// gateway's URL, and stop, which ends it.
func startGatewayChild(ctx context.Context, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, out *bufio.Reader, url string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, nil, "", nil, err
	}
	cmd = exec.CommandContext(ctx, exe, append([]string{"-role=gateway"}, args...)...)
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, nil, "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, "", nil, err
	}
	stop = func() { stdin.Close(); _ = cmd.Wait() }
	out = bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		stop()
		return nil, nil, nil, "", nil, fmt.Errorf("reading the gateway's address: %w", err)
	}
	return cmd, stdin, out, strings.TrimSpace(line), stop, nil
}

// runGatewayChild is -role=gateway: a gateway alone in its process, whose
// address goes to stdout; it ends when stdin closes.
func runGatewayChild(env map[string]string) error {
	url, stop, err := startGatewayEnv(env)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Println(url)
	// "heap <file>" on stdin writes a heap profile (see -heapprofile);
	// "mem" prints the live heap after a GC and the goroutine count.
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "mem" {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Println(ms.HeapAlloc, runtime.NumGoroutine())
			continue
		}
		if file, ok := strings.CutPrefix(sc.Text(), "heap "); ok {
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			err = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
			if err != nil {
				return err
			}
			fmt.Println("done")
		}
	}
	return nil
}

// measureRSS starts a gateway process, opens streams through the door
// that stay open (the fake holds them after a first delta), and reads the
// process's peak RSS once every stream has delivered content.
func measureRSS(up *fake, dr door, streams int, heapProfile string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd, stdin, out, gwURL, stop, err := startGatewayChild(ctx, "-native=false", "-upstream="+up.url+"/api/chat/hold")
	if err != nil {
		return err
	}
	defer stop()
	idle, err := rss(cmd.Process.Pid)
	if err != nil {
		return err
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}}
	defer client.CloseIdleConnections()
	reqCtx, release := context.WithCancel(ctx)
	defer release()
	var wg sync.WaitGroup
	var opened, failed atomic.Int64
	ready := make(chan struct{}, streams)
	for range streams {
		wg.Go(func() {
			signalled := false
			signal := func() {
				if !signalled {
					signalled = true
					ready <- struct{}{}
				}
			}
			defer signal()
			req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, gwURL+dr.path, bytes.NewReader(dr.body("claude-sonnet-4.6")))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				if failed.Add(1) == 1 {
					fmt.Fprintln(os.Stderr, "first failed stream:", err, resp != nil && resp.StatusCode != http.StatusOK)
				}
				if err == nil {
					resp.Body.Close()
				}
				return
			}
			go func() { <-reqCtx.Done(); resp.Body.Close() }()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && dr.content(data) {
					opened.Add(1)
					signal()
					<-reqCtx.Done()
					return
				}
			}
			failed.Add(1)
		})
	}
	for range streams {
		<-ready
	}
	peak, err := rss(cmd.Process.Pid)
	if err != nil {
		return err
	}
	if heapProfile != "" {
		fmt.Fprintf(stdin, "heap %s\n", heapProfile)
		if _, err := out.ReadString('\n'); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
	}
	release()
	wg.Wait()
	fmt.Printf("RSS of a gateway process (%s door) with %d open streams (%d opened, %d failed): idle %s, peak %s (VmHWM), %s per stream\n",
		dr.name, streams, opened.Load(), failed.Load(), mb(idle.hwm), mb(peak.hwm), kb((peak.rss-idle.rss)/max(1, opened.Load())))
	return nil
}

type memory struct{ rss, hwm int64 }

// rss reads VmRSS and VmHWM (the peak) of a process, in bytes.
func rss(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("reading the RSS (Linux only): %w", err)
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		var field *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			field = &m.rss
		case strings.HasPrefix(line, "VmHWM:"):
			field = &m.hwm
		default:
			continue
		}
		parts := strings.Fields(line)
		if len(parts) >= 2 {
			n, _ := strconv.ParseInt(parts[1], 10, 64)
			*field = n << 10
		}
	}
	return m, nil
}

func mb(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MB" }
func kb(b int64) string { return strconv.FormatFloat(float64(b)/(1<<10), 'f', 1, 64) + " KB" }

// compareStates measures the small answer through every door of a gateway
// on each state engine in turn. Each request writes state: the Responses
// door stores its response, the others add to the usage ledger.
func compareStates(urls []string, scale float64) error {
	up, err := startFake()
	if err != nil {
		return err
	}
	defer up.Close()
	a := answers()[0]
	up.setDeltas(a.deltas)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, DisableCompression: true}}
	defer client.CloseIdleConnections()
	type row struct{ p50, p99, rate []string }
	rows := map[string]*row{}
	var keys []string
	for _, u := range urls {
		env := map[string]string{"STATE_URL": u}
		if u == "file" {
			dir, err := os.MkdirTemp("", "cursor2api-bench-state-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			env = map[string]string{"STATE_URL": "", "STATE_DIR": dir}
		}
		gwURL, stop, err := startGateway(up.url+"/api/chat", env)
		if err != nil {
			return fmt.Errorf("STATE_URL=%s: %w", u, err)
		}
		for _, dr := range doors {
			for _, conc := range []int{1, 50} {
				n := max(conc, int(float64(a.requests[conc])*scale))
				via := target{url: gwURL + dr.path, body: dr.body("claude-sonnet-4.6"), content: dr.content, done: dr.done}
				if _, err := load(client, via, conc, conc); err != nil {
					stop()
					return err
				}
				g, err := load(client, via, conc, n)
				if err != nil {
					stop()
					return fmt.Errorf("STATE_URL=%s, %s door, concurrency %d: %w", u, dr.name, conc, err)
				}
				k := fmt.Sprintf("%-9s %5d %6d", dr.name, conc, n)
				if rows[k] == nil {
					rows[k] = &row{}
					keys = append(keys, k)
				}
				r := rows[k]
				r.p50, r.p99, r.rate = append(r.p50, ms(g.ttfb(50))), append(r.p99, ms(g.ttfb(99))), append(r.rate, strconv.FormatFloat(g.rate(), 'f', 1, 64))
			}
		}
		client.CloseIdleConnections()
		stop()
	}
	fmt.Printf("\nstate engines, %s answer: time to first content byte p50 / p99 and req/s, per STATE_URL\n", a.name)
	fmt.Printf("%-9s %5s %6s", "door", "conc", "reqs")
	for _, u := range urls {
		fmt.Printf(" | %-33s", u)
	}
	fmt.Println()
	for _, k := range keys {
		r := rows[k]
		fmt.Print(k)
		for i := range urls {
			fmt.Printf(" | %9s %9s %13s", r.p50[i], r.p99[i], r.rate[i])
		}
		fmt.Println()
	}
	return nil
}

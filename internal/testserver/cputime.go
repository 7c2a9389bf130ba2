package testserver

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime returns the processor time (user and system) the running MinIO
// server has used, so that a benchmark can tell the server's share of a
// cost from its own. It reads /proc, so it works on Linux only.
func (m *MinIOServer) CPUTime() (time.Duration, error) { return m.proc.cpuTime() }

// clockTick is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux platform Go supports.
const clockTick = 10 * time.Millisecond

func (p *process) cpuTime() (time.Duration, error) {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return 0, fmt.Errorf("testserver: %s is not running", p.name)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("testserver: %s cpu time: %w", p.name, err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU returns utime+stime of a /proc/<pid>/stat line. The command
// name, in parentheses, may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("testserver: malformed /proc stat")
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15).
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, errors.New("testserver: short /proc stat")
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("testserver: /proc stat time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

package tfrun

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// descendants returns the PIDs of processes below root (any depth) whose executable's
// base name is name, from /proc.
func descendants(root int, name string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if seen[c] {
				continue
			}
			seen[c] = true
			queue = append(queue, c)
			if exeName(c) == name {
				out = append(out, c)
			}
		}
	}
	return out
}

// parentOf reads the parent PID from /proc/<pid>/stat (field 4, after the parenthesised
// command, which may itself hold spaces and parentheses).
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// exeName is the base name of a process's executable ("" when unreadable or gone).
func exeName(pid int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return ""
	}
	return filepath.Base(strings.TrimSuffix(p, " (deleted)"))
}

// isProvider reports whether pid is a live (not zombie) provider process.
func isProvider(pid int) bool {
	if exeName(pid) != BinaryName {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && f[0] != "Z"
}

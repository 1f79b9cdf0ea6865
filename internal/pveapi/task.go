package pveapi

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// UPID is a decoded Proxmox task id:
// UPID:<node>:<pid %08X>:<pstart %08X>:<starttime %08X>:<type>:<id>:<user>: (fact: upid-format).
type UPID struct {
	Node      string
	PID       int64
	PStart    int64
	StartTime int64
	// Type is the task type: qmclone, qmstart, qmstop, resize, qmdestroy, imgcopy, imgdel...
	Type string
	// ID is the task's object id (a VMID, or empty as for imgcopy).
	ID string
	// User is the user that started the task; with an API token "user@realm!tokenid".
	User string
}

// ParseUPID decodes a UPID string. The trailing colon is required, as Proxmox always sends it.
func ParseUPID(s string) (UPID, error) {
	rest, ok := strings.CutPrefix(s, "UPID:")
	if !ok {
		return UPID{}, fmt.Errorf("malformed UPID %q: no UPID: prefix", s)
	}
	rest, ok = strings.CutSuffix(rest, ":")
	if !ok {
		return UPID{}, fmt.Errorf("malformed UPID %q: no trailing colon", s)
	}
	f := strings.Split(rest, ":")
	if len(f) != 7 {
		return UPID{}, fmt.Errorf("malformed UPID %q: %d fields, want 7", s, len(f))
	}
	u := UPID{Node: f[0], Type: f[4], ID: f[5], User: f[6]}
	if u.Node == "" || u.Type == "" || u.User == "" {
		return UPID{}, fmt.Errorf("malformed UPID %q: empty node, type or user", s)
	}
	for i, dst := range []*int64{&u.PID, &u.PStart, &u.StartTime} {
		v, err := strconv.ParseInt(f[1+i], 16, 64)
		if err != nil || len(f[1+i]) < 8 {
			return UPID{}, fmt.Errorf("malformed UPID %q: field %d is not 8+ hex digits", s, 2+i)
		}
		*dst = v
	}
	return u, nil
}

// TaskSucceeded reports whether a stopped task's exitstatus means success: "OK", or
// "WARNINGS: <n>" (the task finished with warnings, fact: task-status). Anything else is the error text.
func TaskSucceeded(exitStatus string) bool {
	if exitStatus == "OK" {
		return true
	}
	n, ok := strings.CutPrefix(exitStatus, "WARNINGS: ")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 32)
	return err == nil
}

// TaskError is a task that stopped with an exitstatus other than OK or WARNINGS (seed entry
// 13: Transient, with the text).
type TaskError struct {
	UPID       string
	ExitStatus string
}

func (e *TaskError) Error() string {
	typ := "task"
	if u, err := ParseUPID(e.UPID); err == nil {
		typ = u.Type + " task"
	}
	return fmt.Sprintf("proxmox %s %s failed: %s", typ, e.UPID, e.ExitStatus)
}

// reVolumeMissing is the exitstatus of a task that needed a volume the storage does not hold
// (pve-storage's activate_volume; task_status_start_volume_missing).
var reVolumeMissing = regexp.MustCompile(`^volume '([^'\s]+)' does not exist$`)

// MissingVolume returns the volume id a failed task names as missing, when err carries a
// *TaskError whose exitstatus is the whole text "volume '<volid>' does not exist": a start
// whose drive (a seed ISO deleted by an earlier destroy, say) is gone.
func MissingVolume(err error) (string, bool) {
	var te *TaskError
	if !errors.As(err, &te) {
		return "", false
	}
	m := reVolumeMissing.FindStringSubmatch(te.ExitStatus)
	if m == nil {
		return "", false
	}
	return m[1], true
}

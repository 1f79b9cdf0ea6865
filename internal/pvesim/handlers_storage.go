package pvesim

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxUpload bounds an uploaded file held in memory.
const maxUpload = 256 << 20

type uploadFile struct {
	name string
	data []byte
}

// volume finds a volume as a VM on nodeName sees it (shared storages are cluster-wide).
func (s *Sim) volume(nodeName, volid string) *volume {
	sid, _, _ := strings.Cut(volid, ":")
	st := s.storages[sid]
	if st == nil {
		return nil
	}
	if st.shared {
		nodeName = ""
	}
	return s.volumes[volKey(nodeName, volid)]
}

func (s *Sim) storageUsed(nodeName string, st *storage) int64 {
	var used int64
	for _, vol := range s.volumes {
		if vol.storage == st.id && (st.shared || vol.node == nodeName) {
			used += int64(len(vol.data))
		}
	}
	for _, v := range s.vms {
		if !st.shared && v.node != nodeName {
			continue
		}
		for k, val := range v.conf {
			if (driveKeyRe.MatchString(k) || k == "rootfs") && strings.HasPrefix(driveVolume(val), st.id+":") {
				n, _ := parseSize(optValue(val, "size"))
				used += n / 8 // thin provisioning
			}
		}
	}
	return used
}

func (s *Sim) hStorageList(c *call) *response {
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.storages)) {
		st := s.storages[id]
		// Only the storages the caller may see (pve-storage src/PVE/API2/Storage/Status.pm
		// index: check_any Datastore.Audit or Datastore.AllocateSpace).
		if !c.canAny("/storage/"+id, "Datastore.Audit", "Datastore.AllocateSpace") {
			continue
		}
		if want := c.params["storage"]; want != "" && want != id {
			continue
		}
		if want := c.params["content"]; want != "" && !st.has(want) {
			continue
		}
		used := s.storageUsed(c.node, st)
		out = append(out, map[string]any{
			"storage": id, "type": st.typ, "content": strings.Join(st.content, ","), "active": 1, "enabled": 1,
			"shared": b2i(st.shared), "total": st.total, "used": used, "avail": st.total - used,
			"used_fraction": float64(used) / float64(st.total),
		})
	}
	return okData(out)
}

// hStorageStatus: a missing storage is a 400 with errors.storage (fact: missing-storage-400).
func (s *Sim) hStorageStatus(c *call) *response {
	st := s.storages[c.vars["storage"]]
	if st == nil {
		return paramError(map[string]string{"storage": "No such storage."})
	}
	used := s.storageUsed(c.node, st)
	return okData(map[string]any{
		"type": st.typ, "content": strings.Join(st.content, ","), "total": st.total, "used": used,
		"avail": st.total - used, "active": 1, "enabled": 1, "shared": b2i(st.shared),
	})
}

var contentTypes = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}

func (s *Sim) hStorageContent(c *call) *response {
	sid := c.vars["storage"]
	st := s.storages[sid]
	if st == nil {
		return apiError(500, fmt.Sprintf("storage '%s' does not exist", sid))
	}
	want := c.params["content"]
	if want != "" && !slices.Contains(contentTypes, want) {
		return paramError(map[string]string{"content": fmt.Sprintf("invalid format - invalid content type '%s'\n", want)})
	}
	wantVMID := c.params["vmid"]
	type entry = map[string]any
	out := []entry{}
	for _, vol := range s.volumes {
		if vol.storage != sid || (!st.shared && vol.node != c.node) {
			continue
		}
		ct, _, _ := strings.Cut(vol.name, "/")
		if (want != "" && ct != want) || wantVMID != "" {
			continue
		}
		format := ct
		if ct == "vztmpl" {
			format = "tgz"
		}
		out = append(out, entry{"volid": vol.volid(), "format": format, "size": int64(len(vol.data)), "ctime": vol.ctime, "content": ct})
	}
	if st.has("images") && (want == "" || want == "images") {
		for _, id := range slices.Sorted(maps.Keys(s.vms)) {
			v := s.vms[id]
			if (!st.shared && v.node != c.node) || (wantVMID != "" && wantVMID != strconv.Itoa(id)) {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(v.conf)) {
				val := v.conf[k]
				vol := driveVolume(val)
				if (!driveKeyRe.MatchString(k) && k != "rootfs") || !strings.HasPrefix(vol, sid+":") || isCDROM(val) {
					continue
				}
				n, _ := parseSize(optValue(val, "size"))
				out = append(out, entry{"volid": vol, "format": "raw", "size": n, "vmid": id, "content": "images"})
			}
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a["volid"].(string), b["volid"].(string)) })
	return okData(out)
}

var (
	isoExtRe    = regexp.MustCompile(`(?i)[^/]+\.(?:iso|img)$`)
	vztmplExtRe = regexp.MustCompile(`(?i)[^/]+\.tar\.(?:gz|xz|zst|bz2)$`)
	importExtRe = regexp.MustCompile(`(?i)[^/]+\.(?:ova|ovf|qcow2|raw|vmdk)$`)
	badNameRe   = regexp.MustCompile(`[^-_.a-zA-Z0-9]`)
	vmDiskRe    = regexp.MustCompile(`^(?:vm|base)-(\d+)-`)
)

// hUpload: multipart, content field first, the file part last (fact: upload-overwrites). Fields after the
// file part are not seen, as with pveproxy, which streams the file to disk.
func (s *Sim) hUpload(c *call) *response {
	sid := c.vars["storage"]
	st := s.storages[sid]
	if st == nil {
		return apiError(500, fmt.Sprintf("storage '%s' does not exist", sid))
	}
	if !st.hasPath {
		return apiError(500, fmt.Sprintf("can't upload to storage type '%s'", st.typ))
	}
	if c.upload == nil {
		return apiError(500, "missing temporary file name")
	}
	content := c.params["content"]
	name := badNameRe.ReplaceAllString(c.params["filename"], "_")
	var dir string
	switch content {
	case "iso":
		if !isoExtRe.MatchString(name) {
			return paramError(map[string]string{"filename": "wrong file extension"})
		}
		dir = "iso"
	case "vztmpl":
		if !vztmplExtRe.MatchString(name) {
			return paramError(map[string]string{"filename": "wrong file extension"})
		}
		dir = "vztmpl"
	case "import":
		if !importExtRe.MatchString(name) {
			return paramError(map[string]string{"filename": "invalid filename or wrong extension"})
		}
		dir = "import"
	default:
		return paramError(map[string]string{"content": fmt.Sprintf("upload content type '%s' not allowed", content)})
	}
	if !st.has(content) {
		return apiError(500, fmt.Sprintf("storage '%s' does not support '%s' content", sid, content))
	}
	data := c.upload.data
	nodeName := c.node
	if st.shared {
		nodeName = ""
	}
	t := s.newTask(c, c.node, "imgcopy", "", 0, false, s.dur.Upload)
	t.log = append(t.log, fmt.Sprintf("starting file import from: /var/tmp/pveupload-%x", s.rng.Uint32()),
		fmt.Sprintf("target node: %s", c.node),
		fmt.Sprintf("target file: /var/lib/vz/template/%s/%s", dir, name),
		fmt.Sprintf("file size is: %d", len(data)))
	t.finish = func(at time.Time) string {
		vol := &volume{node: nodeName, storage: sid, name: dir + "/" + name, data: data, ctime: at.Unix()}
		s.volumes[volKey(nodeName, vol.volid())] = vol
		t.log = append(t.log, "finished file import successfully")
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

func readMultipart(req *http.Request, boundary string) (*uploadFile, map[string]string, *response) {
	if boundary == "" {
		return nil, nil, apiError(400, "Bad Request")
	}
	mr := multipart.NewReader(req.Body, boundary)
	fields := map[string]string{}
	var up *uploadFile
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, apiError(400, "Bad Request")
		}
		if part.FileName() != "" {
			data, err := io.ReadAll(io.LimitReader(part, maxUpload+1))
			if err != nil {
				return nil, nil, apiError(400, "Bad Request")
			}
			if len(data) > maxUpload {
				return nil, nil, apiError(413, "Request Entity Too Large")
			}
			if up == nil {
				up = &uploadFile{name: part.FileName(), data: data}
			}
			continue
		}
		b, err := io.ReadAll(io.LimitReader(part, maxFormBody+1))
		if err != nil || len(b) > maxFormBody {
			return nil, nil, apiError(400, "Bad Request")
		}
		if up == nil {
			fields[part.FormName()] = string(b)
		}
	}
	return up, fields, nil
}

// realVolumeID is pve-storage src/PVE/API2/Storage/Content.pm $real_volume_id (lines
// 278-301): a volume id of another storage is a 400 on volume.
func realVolumeID(sid, volume string) (string, *response) {
	if vs, volname, ok := strings.Cut(volume, ":"); ok {
		if vs != sid {
			return "", paramError(map[string]string{"volume": fmt.Sprintf("storage ID mismatch (%s != %s)\n", vs, sid)})
		}
		if volname == "" {
			return "", paramError(map[string]string{"volume": fmt.Sprintf("unable to parse volume ID '%s'\n", volume)})
		}
		return volume, nil
	}
	return sid + ":" + volume, nil
}

// storagePath is where a directory storage lives (local: /var/lib/vz, others under
// /mnt/pve, as pvesm add dir is usually given).
func storagePath(st *storage) string {
	if st.id == "local" {
		return "/var/lib/vz"
	}
	return "/mnt/pve/" + st.id
}

// hVolumeInfo is GET .../content/{volume} (pve-storage src/PVE/API2/Storage/Content.pm
// info, lines 303-398): path, size, used, format from volume_size_info.
func (s *Sim) hVolumeInfo(c *call) *response {
	sid := c.vars["storage"]
	st := s.storages[sid]
	if st == nil {
		return apiError(500, fmt.Sprintf("storage '%s' does not exist", sid))
	}
	volid, r := realVolumeID(sid, c.vars["volume"])
	if r != nil {
		return r
	}
	// The method is open to every user; its code checks the volume (Content.pm info:
	// PVE::Storage::check_volume_access).
	if err := c.checkVolumeAccess(volid, 0); err != nil {
		return errResponse(err)
	}
	_, volname, _ := strings.Cut(volid, ":")
	if vol := s.volume(c.node, volid); vol != nil {
		return okData(map[string]any{
			"path": storagePath(st) + "/template/" + volname, "size": int64(len(vol.data)),
			"used": int64(len(vol.data)), "format": strings.SplitN(vol.name, "/", 2)[0],
		})
	}
	for _, v := range s.vms {
		if !st.shared && v.node != c.node {
			continue
		}
		for k, val := range v.conf {
			if (driveKeyRe.MatchString(k) || k == "rootfs") && driveVolume(val) == volid && !isCDROM(val) {
				n, _ := parseSize(optValue(val, "size"))
				path := "/dev/pve/" + volname
				if st.shared {
					path = "rbd:" + sid + "/" + volname
				}
				return okData(map[string]any{"path": path, "size": n, "used": n / 8, "format": "raw"})
			}
		}
	}
	return apiError(500, fmt.Sprintf("volume_size_info on '%s' failed - no format", volid))
}

// hVolumeDelete: an imgdel task that ends OK even when the volume is missing (fact: volume-delete-task). The
// method is open to every user; its code asks Datastore.Allocate on the storage
// (pve-storage src/PVE/API2/Storage/Content.pm delete; a backup volume's AllocateSpace and
// VM.Backup branch is not simulated).
func (s *Sim) hVolumeDelete(c *call) *response {
	sid := c.vars["storage"]
	st := s.storages[sid]
	if st == nil {
		return apiError(500, fmt.Sprintf("storage '%s' does not exist", sid))
	}
	volid, r := realVolumeID(sid, c.vars["volume"])
	if r != nil {
		return r
	}
	if err := c.check("/storage/"+sid, "Datastore.Allocate"); err != nil {
		return errResponse(err)
	}
	// No "volume in use" refusal: pve-storage's vdisk_free frees what it is asked to.
	nodeName := c.node
	if st.shared {
		nodeName = ""
	}
	// The task id is the storage, prefixed "<owner>@" for a VM's volume (pve-storage
	// src/PVE/API2/Storage/Content.pm delete, line 521).
	id := sid
	_, volname, _ := strings.Cut(volid, ":")
	if m := vmDiskRe.FindStringSubmatch(volname); m != nil {
		id = m[1] + "@" + sid
	}
	t := s.newTask(c, c.node, "imgdel", id, 0, false, s.dur.VolumeDelete)
	t.finish = func(at time.Time) string {
		key := volKey(nodeName, volid)
		if _, ok := s.volumes[key]; !ok {
			t.log = append(t.log, fmt.Sprintf("disk image '%s' does not exist", volid))
		}
		delete(s.volumes, key)
		t.log = append(t.log, fmt.Sprintf("Removed volume '%s'", volid))
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

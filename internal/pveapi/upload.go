package pveapi

import (
	"bytes"
	"mime/multipart"
)

// multipartFrame renders the framing of a two-part multipart/form-data body around a
// streamed file: head holds the field part and the file part's header, tail the closing
// boundary. The file bytes go between them, so the body is never held in memory and its
// length is known exactly (the curl -F upload of the recon captures sent a Content-Length too).
func multipartFrame(field, value, fileField, fileName string) (head, tail, boundary string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	// Writes to a bytes.Buffer cannot fail.
	_ = w.WriteField(field, value)
	_, _ = w.CreateFormFile(fileField, fileName)
	head = buf.String()
	buf.Reset()
	_ = w.Close()
	return head, buf.String(), w.Boundary()
}

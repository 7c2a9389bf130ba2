package objectstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
)

// minioAPI speaks to MinIO and other S3-compatible services with minio-go.
type minioAPI struct {
	core   minio.Core
	bucket string
	sse    encrypt.ServerSide // nil for the bucket's default
}

var _ remoteAPI = (*minioAPI)(nil)

func newMinIOAPI(cfg Config, transport http.RoundTripper) (*minioAPI, error) {
	u, err := url.Parse(endpointURL(cfg))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("objectstore: minio endpoint %q is not host[:port] or a URL", cfg.Endpoint)
	}
	creds := credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, "")
	if cfg.AccessKeyID == "" {
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvMinio{},
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	region := cfg.Region
	if region == "" {
		// A known region spares a GetBucketLocation request per bucket.
		region = "us-east-1"
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:           creds,
		Secure:          u.Scheme == "https",
		Region:          region,
		BucketLookup:    lookup,
		Transport:       transport,
		TrailingHeaders: true,
		// One attempt per call: remoteStore retries, and counts each try.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("objectstore: minio client: %w", err)
	}
	b := &minioAPI{core: minio.Core{Client: client}, bucket: cfg.Bucket}
	switch cfg.SSE {
	case SSES3:
		b.sse = encrypt.NewSSE()
	case SSEKMS:
		if b.sse, err = encrypt.NewSSEKMS(cfg.SSEKMSKeyID, nil); err != nil {
			return nil, fmt.Errorf("objectstore: -objectstore.sse-kms-key-id: %w", err)
		}
	}
	return b, nil
}

func (b *minioAPI) putObject(ctx context.Context, key string, data []byte, cond *Condition) (string, error) {
	// Without a SHA-256 of the body; a CRC32C trailer protects it instead.
	opts := minio.PutObjectOptions{DisableContentSha256: true, ServerSideEncryption: b.sse}
	if cond != nil {
		if cond.Absent() {
			opts.SetMatchETagExcept("*")
		} else {
			opts.SetMatchETag(cond.ETag())
		}
	}
	info, err := b.core.PutObject(ctx, b.bucket, key, bytes.NewReader(data), int64(len(data)), "", "", opts)
	if err != nil {
		err = b.mapError(err, key)
		if cond != nil && !cond.Absent() && IsNotFound(err) {
			err = fmt.Errorf("%w: %w", ErrPreconditionFailed, err)
		}
		return "", err
	}
	return info.ETag, nil
}

func (b *minioAPI) getObject(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	var opts minio.GetObjectOptions
	if r := httpRange(off, length); r != "" {
		opts.Set("Range", r)
	}
	rc, _, _, err := b.core.GetObject(ctx, b.bucket, key, opts)
	if err != nil {
		return nil, b.mapError(err, key)
	}
	return rc, nil
}

func (b *minioAPI) headObject(ctx context.Context, key string) (Attrs, error) {
	info, err := b.core.StatObject(ctx, b.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return Attrs{}, b.mapError(err, key)
	}
	return Attrs{Key: key, Size: info.Size, ETag: info.ETag, ModTime: info.LastModified}, nil
}

func (b *minioAPI) listObjects(ctx context.Context, prefix, token string, max int) ([]Attrs, string, error) {
	// Core.ListObjectsV2 takes no context: run it aside so that the caller
	// is not held past its deadline (the transport's timeouts end the
	// request itself).
	type result struct {
		res minio.ListBucketV2Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.core.ListObjectsV2(b.bucket, prefix, "", token, "", max)
		done <- result{res, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	if r.err != nil {
		return nil, "", b.mapError(r.err, prefix)
	}
	page := make([]Attrs, len(r.res.Contents))
	for i, o := range r.res.Contents {
		page[i] = Attrs{Key: o.Key, Size: o.Size, ETag: unquoteETag(o.ETag), ModTime: o.LastModified}
	}
	next := ""
	if r.res.IsTruncated {
		next = r.res.NextContinuationToken
		if next == "" {
			return nil, "", fmt.Errorf("objectstore: minio: truncated listing of %q without a continuation token", prefix)
		}
	}
	return page, next, nil
}

func (b *minioAPI) deleteObject(ctx context.Context, key string) error {
	return b.mapError(b.core.RemoveObject(ctx, b.bucket, key, minio.RemoveObjectOptions{}), key)
}

func (b *minioAPI) createUpload(ctx context.Context, key string) (string, error) {
	id, err := b.core.NewMultipartUpload(ctx, b.bucket, key, minio.PutObjectOptions{ServerSideEncryption: b.sse})
	return id, b.mapError(err, key)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (b *minioAPI) uploadPart(ctx context.Context, key, uploadID string, num int, data []byte) (completedPart, error) {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(data, castagnoli))
	crc := base64.StdEncoding.EncodeToString(sum[:])
	h := http.Header{}
	h.Set("x-amz-checksum-crc32c", crc)
	part, err := b.core.PutObjectPart(ctx, b.bucket, key, uploadID, num, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectPartOptions{CustomHeader: h, DisableContentSha256: true})
	if err != nil {
		return completedPart{}, b.mapError(err, key)
	}
	return completedPart{num: num, etag: part.ETag, crc32c: crc}, nil
}

func (b *minioAPI) completeUpload(ctx context.Context, key, uploadID string, parts []completedPart) error {
	cps := make([]minio.CompletePart, len(parts))
	for i, p := range parts {
		cps[i] = minio.CompletePart{PartNumber: p.num, ETag: p.etag, ChecksumCRC32C: p.crc32c}
	}
	_, err := b.core.CompleteMultipartUpload(ctx, b.bucket, key, uploadID, cps, minio.PutObjectOptions{})
	return b.mapError(err, key)
}

func (b *minioAPI) abortUpload(ctx context.Context, key, uploadID string) error {
	return b.mapError(b.core.AbortMultipartUpload(ctx, b.bucket, key, uploadID), key)
}

func minioStatus(err error) (status int, code string, ok bool) {
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		return er.StatusCode, er.Code, true
	}
	return 0, "", false
}

func (b *minioAPI) mapError(err error, key string) error {
	if err == nil {
		return nil
	}
	status, code, _ := minioStatus(err)
	return mapS3Error(err, "minio", key, status, code)
}

func (b *minioAPI) transient(err error) bool {
	status, code, ok := minioStatus(err)
	if !ok || status == 0 && code == "" {
		return transientNetwork(err)
	}
	return transientStatus(status, code)
}

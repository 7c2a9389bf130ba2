package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// s3API speaks to S3 and S3-compatible services with aws-sdk-go-v2.
type s3API struct {
	client *s3.Client
	bucket string
	sse    types.ServerSideEncryption // "" for the bucket's default
	kmsKey *string
}

var _ remoteAPI = (*s3API)(nil)

func newS3API(ctx context.Context, cfg Config) (*s3API, error) {
	// A buildable client, so that a CA bundle from the AWS environment can
	// still be added to the transport.
	hc := awshttp.NewBuildableClient().WithTransportOptions(configureTransport)
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithHTTPClient(hc),
		// One attempt per call: remoteStore retries, and counts each try.
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objectstore: s3 configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(endpointURL(cfg))
		}
		o.UsePathStyle = cfg.PathStyle
		// Ranged reads never carry a whole-object checksum; do not log
		// that for every read.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	b := &s3API{client: client, bucket: cfg.Bucket}
	switch cfg.SSE {
	case SSES3:
		b.sse = types.ServerSideEncryptionAes256
	case SSEKMS:
		b.sse = types.ServerSideEncryptionAwsKms
		if cfg.SSEKMSKeyID != "" {
			b.kmsKey = aws.String(cfg.SSEKMSKeyID)
		}
	}
	return b, nil
}

// endpointURL returns cfg.Endpoint as a URL, adding the scheme that
// cfg.Insecure implies if it has none.
func endpointURL(cfg Config) string {
	if strings.Contains(cfg.Endpoint, "://") {
		return cfg.Endpoint
	}
	if cfg.Insecure {
		return "http://" + cfg.Endpoint
	}
	return "https://" + cfg.Endpoint
}

// unsignedPayload skips hashing request bodies for the signature: the CRC32C
// checksum sent with each upload already protects the bytes, and SHA-256 of
// every uploaded byte would cost more CPU than the rest of the upload.
func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

func (b *s3API) putObject(ctx context.Context, key string, data []byte, cond *Condition) (string, error) {
	in := &s3.PutObjectInput{
		Bucket:            &b.bucket,
		Key:               &key,
		Body:              bytes.NewReader(data),
		ContentLength:     aws.Int64(int64(len(data))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
		// Asked of every object: a bucket default set later does not
		// reach objects stored before it.
		ServerSideEncryption: b.sse,
		SSEKMSKeyId:          b.kmsKey,
	}
	if cond != nil {
		if cond.Absent() {
			in.IfNoneMatch = aws.String("*")
		} else {
			in.IfMatch = aws.String(quoteETag(cond.ETag()))
		}
	}
	out, err := b.client.PutObject(ctx, in, unsignedPayload)
	if err != nil {
		err = b.mapError(err, key)
		if cond != nil && !cond.Absent() && IsNotFound(err) {
			// S3 answers If-Match on a missing key with 404.
			err = fmt.Errorf("%w: %w", ErrPreconditionFailed, err)
		}
		return "", err
	}
	return unquoteETag(aws.ToString(out.ETag)), nil
}

func (b *s3API) getObject(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &b.bucket, Key: &key}
	if r := httpRange(off, length); r != "" {
		in.Range = &r
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return nil, b.mapError(err, key)
	}
	return out.Body, nil
}

// httpRange returns the Range header for length bytes at off, or "" for
// the whole object.
func httpRange(off, length int64) string {
	switch {
	case length < 0 && off == 0:
		return ""
	case length < 0 || length > math.MaxInt64-off:
		return fmt.Sprintf("bytes=%d-", off)
	default:
		return fmt.Sprintf("bytes=%d-%d", off, off+length-1)
	}
}

func (b *s3API) headObject(ctx context.Context, key string) (Attrs, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return Attrs{}, b.mapError(err, key)
	}
	return Attrs{
		Key:     key,
		Size:    aws.ToInt64(out.ContentLength),
		ETag:    unquoteETag(aws.ToString(out.ETag)),
		ModTime: aws.ToTime(out.LastModified),
	}, nil
}

func (b *s3API) listObjects(ctx context.Context, prefix, token string, max int) ([]Attrs, string, error) {
	in := &s3.ListObjectsV2Input{Bucket: &b.bucket, MaxKeys: aws.Int32(int32(max))}
	if prefix != "" {
		in.Prefix = &prefix
	}
	if token != "" {
		in.ContinuationToken = &token
	}
	out, err := b.client.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, "", b.mapError(err, prefix)
	}
	page := make([]Attrs, len(out.Contents))
	for i, o := range out.Contents {
		page[i] = Attrs{
			Key:     aws.ToString(o.Key),
			Size:    aws.ToInt64(o.Size),
			ETag:    unquoteETag(aws.ToString(o.ETag)),
			ModTime: aws.ToTime(o.LastModified),
		}
	}
	next := ""
	if aws.ToBool(out.IsTruncated) {
		next = aws.ToString(out.NextContinuationToken)
		if next == "" {
			return nil, "", fmt.Errorf("objectstore: s3: truncated listing of %q without a continuation token", prefix)
		}
	}
	return page, next, nil
}

func (b *s3API) deleteObject(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key})
	return b.mapError(err, key)
}

func (b *s3API) createUpload(ctx context.Context, key string) (string, error) {
	out, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:               &b.bucket,
		Key:                  &key,
		ChecksumAlgorithm:    types.ChecksumAlgorithmCrc32c,
		ServerSideEncryption: b.sse,
		SSEKMSKeyId:          b.kmsKey,
	})
	if err != nil {
		return "", b.mapError(err, key)
	}
	return aws.ToString(out.UploadId), nil
}

func (b *s3API) uploadPart(ctx context.Context, key, uploadID string, num int, data []byte) (completedPart, error) {
	out, err := b.client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket:            &b.bucket,
		Key:               &key,
		UploadId:          &uploadID,
		PartNumber:        aws.Int32(int32(num)),
		Body:              bytes.NewReader(data),
		ContentLength:     aws.Int64(int64(len(data))),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c,
	}, unsignedPayload)
	if err != nil {
		return completedPart{}, b.mapError(err, key)
	}
	return completedPart{num: num, etag: aws.ToString(out.ETag), crc32c: aws.ToString(out.ChecksumCRC32C)}, nil
}

func (b *s3API) completeUpload(ctx context.Context, key, uploadID string, parts []completedPart) error {
	cps := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		cps[i] = types.CompletedPart{PartNumber: aws.Int32(int32(p.num)), ETag: aws.String(p.etag)}
		if p.crc32c != "" {
			cps[i].ChecksumCRC32C = aws.String(p.crc32c)
		}
	}
	_, err := b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:          &b.bucket,
		Key:             &key,
		UploadId:        &uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: cps},
	})
	return b.mapError(err, key)
}

func (b *s3API) abortUpload(ctx context.Context, key, uploadID string) error {
	_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket: &b.bucket, Key: &key, UploadId: &uploadID,
	})
	return b.mapError(err, key)
}

// s3Status extracts the HTTP status and S3 error code of an SDK error.
func s3Status(err error) (status int, code string) {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

func (b *s3API) mapError(err error, key string) error {
	if err == nil {
		return nil
	}
	status, code := s3Status(err)
	return mapS3Error(err, "s3", key, status, code)
}

func (b *s3API) transient(err error) bool {
	status, code := s3Status(err)
	if status == 0 && code == "" {
		return transientNetwork(err)
	}
	return transientStatus(status, code)
}

// mapS3Error wraps err, an S3 error answer with status and code, in the
// package's sentinel errors.
func mapS3Error(err error, backend, key string, status int, code string) error {
	switch {
	case code == "NoSuchUpload":
		return fmt.Errorf("%w: %s: %w", errNoSuchUpload, key, err)
	case code == "NoSuchBucket":
		return fmt.Errorf("objectstore: %s: %w", backend, err)
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		return fmt.Errorf("%w: %s: %w", ErrNotFound, key, err)
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
		return fmt.Errorf("%w: %s: %w", ErrPreconditionFailed, key, err)
	case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
		return fmt.Errorf("%w: %s: %w", ErrInvalidRange, key, err)
	}
	return fmt.Errorf("objectstore: %s: %s: %w", backend, key, err)
}

func quoteETag(etag string) string { return `"` + etag + `"` }

func unquoteETag(etag string) string { return strings.Trim(etag, `"`) }

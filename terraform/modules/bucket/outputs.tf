output "name" {
  description = "Name of the bucket."
  value       = aws_s3_bucket.this.id
}

output "arn" {
  description = "ARN of the bucket."
  value       = aws_s3_bucket.this.arn
}

output "region" {
  description = "Region of the bucket."
  value       = aws_s3_bucket.this.region
}

output "kms_key_arn" {
  description = "KMS key that encrypts the objects, or null for SSE-S3."
  value       = var.kms_key_arn
}

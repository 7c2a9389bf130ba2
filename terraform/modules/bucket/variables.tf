variable "name" {
  description = "Name of the S3 bucket; globally unique."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.name)) && !can(regex("\\.\\.", var.name))
    error_message = "name must be a valid S3 bucket name: 3 to 63 lowercase letters, digits, '.' or '-'."
  }
}

variable "kms_key_arn" {
  description = "KMS key that encrypts the objects (SSE-KMS); null encrypts with S3-managed keys (SSE-S3, AES256)."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN."
  }
}

variable "versioning" {
  description = "Keep old versions of overwritten and deleted objects. Off by default: Sediment never overwrites an object and deletes only garbage after its grace period, so versions would only keep paying for deleted SSTables."
  type        = bool
  default     = false
}

variable "noncurrent_version_expiration_days" {
  description = "With versioning on, days after which a noncurrent version is deleted."
  type        = number
  default     = 7

  validation {
    condition     = var.noncurrent_version_expiration_days >= 1
    error_message = "noncurrent_version_expiration_days must be at least 1."
  }
}

variable "abort_incomplete_multipart_upload_days" {
  description = "Days after which the parts of a multipart upload that never completed (a process that died mid-flush or mid-compaction) are deleted."
  type        = number
  default     = 2

  validation {
    condition     = var.abort_incomplete_multipart_upload_days >= 1 && var.abort_incomplete_multipart_upload_days <= 365
    error_message = "abort_incomplete_multipart_upload_days must be between 1 and 365."
  }
}

variable "force_destroy" {
  description = "Let terraform destroy delete the bucket with its objects. Off, so that a destroy cannot take the data with it."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

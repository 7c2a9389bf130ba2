variable "name" {
  description = "Name of the deployment; prefixes resource names."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "instance_type" {
  description = "EC2 instance type of the compactors."
  type        = string
  default     = "m7g.xlarge"
}

variable "min_size" {
  description = "Fewest compactors; at least one, as the compactors both publish the backlog metrics and run the garbage collector."
  type        = number
  default     = 1

  validation {
    condition     = var.min_size >= 1
    error_message = "min_size must be at least 1."
  }
}

variable "max_size" {
  description = "Most compactors."
  type        = number
  default     = 16

  validation {
    condition     = var.max_size >= 1 && var.max_size <= 1000
    error_message = "max_size must be between 1 and 1000."
  }
}

variable "target_queued_jobs_per_worker" {
  description = "Queued jobs (sediment_compaction_queued_jobs, waiting or running) per compactor that the first target tracking policy keeps."
  type        = number
  default     = 2

  validation {
    condition     = var.target_queued_jobs_per_worker > 0
    error_message = "target_queued_jobs_per_worker must be positive."
  }
}

variable "target_queued_bytes_per_worker" {
  description = "Input bytes of queued jobs (sediment_compaction_queued_bytes) per compactor that the second target tracking policy keeps."
  type        = number
  default     = 8589934592

  validation {
    condition     = var.target_queued_bytes_per_worker >= 1048576
    error_message = "target_queued_bytes_per_worker must be at least 1 MiB."
  }
}

variable "max_oldest_job_age_seconds" {
  description = "Age of the oldest queued job (sediment_compaction_oldest_job_age_seconds) past which a step policy adds compactors, however few jobs there are."
  type        = number
  default     = 900

  validation {
    condition     = var.max_oldest_job_age_seconds >= 60
    error_message = "max_oldest_job_age_seconds must be at least 60."
  }
}

variable "alarm_actions" {
  description = "ARNs notified when a cluster health alarm fires or clears (stale members, unserved ranges, compaction lag), for example an SNS topic; empty: the alarms only show in CloudWatch."
  type        = list(string)
  default     = []
}

variable "compaction_lag_alarm_seconds" {
  description = "Age of the oldest compaction job beyond which the compaction lag alarm fires (after scaling on max_oldest_job_age_seconds had its chance)."
  type        = number
  default     = 1800

  validation {
    condition     = var.compaction_lag_alarm_seconds > 0
    error_message = "compaction_lag_alarm_seconds must be positive."
  }
}

variable "metric_namespace" {
  description = "CloudWatch namespace of the published backlog metrics."
  type        = string
  default     = "Sediment"

  validation {
    condition     = can(regex("^[A-Za-z0-9./_#:-]{1,255}$", var.metric_namespace)) && !startswith(var.metric_namespace, "AWS/")
    error_message = "metric_namespace must be a valid custom CloudWatch namespace (not AWS/...)."
  }
}

variable "log_retention_days" {
  description = "Retention of the log group that carries the metrics (CloudWatch embedded metric format)."
  type        = number
  default     = 7

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365], var.log_retention_days)
    error_message = "log_retention_days must be a CloudWatch Logs retention: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180 or 365."
  }
}

variable "extra_flags" {
  description = "Further flags of the compactors, for example { \"gc.grace-period\" = \"2h\" }."
  type        = map(string)
  default     = {}
}

variable "subnets" {
  description = "Private subnets (id, availability_zone, cidr_block) of the compactors."
  type = list(object({
    id                = string
    availability_zone = string
    cidr_block        = string
  }))

  validation {
    condition     = length(var.subnets) >= 1
    error_message = "subnets must list at least one subnet."
  }
}

variable "security_group_id" {
  description = "Security group of the compactors."
  type        = string
}

variable "iam_role_name" {
  description = "IAM role of the compactors; the module adds the right to publish the backlog metrics."
  type        = string
}

variable "instance_profile_name" {
  description = "Instance profile of the compactors."
  type        = string
}

variable "ami_id" {
  description = "AMI of the compactors: Amazon Linux 2023 or another systemd distribution with curl and the AWS CLI."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123abcd."
  }
}

variable "kms_key_arn" {
  description = "KMS key that encrypts the volumes; null uses the account's default EBS key."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN."
  }
}

variable "sediment_binary_s3_uri" {
  description = "Where the sediment binary (a static Linux build for the AMI's architecture) is in S3, as s3://bucket/key: instances copy it at boot with their instance role, which needs s3:GetObject on it (the iam module grants it under <prefix>/releases/). No presigned URL: nothing expires."
  type        = string

  validation {
    condition     = can(regex("^s3://[a-z0-9][a-z0-9.-]+/.+", var.sediment_binary_s3_uri))
    error_message = "sediment_binary_s3_uri must look like s3://bucket/key."
  }
}

variable "sediment_binary_sha256" {
  description = "SHA-256 of the binary; null skips the check."
  type        = string
  default     = null

  validation {
    condition     = var.sediment_binary_sha256 == null || can(regex("^[0-9a-f]{64}$", var.sediment_binary_sha256))
    error_message = "sediment_binary_sha256 must be 64 lowercase hex digits."
  }
}

variable "flags" {
  description = "Flags of sediment shared with the other roles (object store, NATS, logging), without the leading '-'."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

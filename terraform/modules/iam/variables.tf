variable "name" {
  description = "Name of the deployment; prefixes the role names."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "bucket_arn" {
  description = "ARN of the bucket that holds the cluster's objects."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:s3:::[a-z0-9.-]+$", var.bucket_arn))
    error_message = "bucket_arn must be an S3 bucket ARN."
  }
}

variable "prefix" {
  description = "Key prefix of the cluster's objects in the bucket (-objectstore.prefix); the roles get no access outside it. Empty for the whole bucket."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-zA-Z0-9!_.*'()-]+(/[a-zA-Z0-9!_.*'()-]+)*)?$", var.prefix))
    error_message = "prefix must be empty or '/'-separated key segments, without leading or trailing '/'."
  }
}

variable "kms_key_arn" {
  description = "KMS key that encrypts the bucket; null when it uses SSE-S3."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN."
  }
}

variable "ssm_access" {
  description = "Attach AmazonSSMManagedInstanceCore to every role, so that operators reach the instances with Session Manager instead of SSH."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

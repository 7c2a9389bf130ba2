variable "name" {
  description = "Name of the deployment; prefixes every resource name and tags resources with sediment:cluster."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.name))
    error_message = "name must be 2 to 31 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "vpc_id" {
  description = "An existing VPC to deploy into; null creates one."
  type        = string
  default     = null

  validation {
    condition     = var.vpc_id == null || can(regex("^vpc-[0-9a-f]+$", var.vpc_id))
    error_message = "vpc_id must look like vpc-0123abcd."
  }
}

variable "private_subnet_ids" {
  description = "Private subnets of the existing VPC, one or more per availability zone; required when vpc_id is set, ignored otherwise."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for s in var.private_subnet_ids : can(regex("^subnet-[0-9a-f]+$", s))])
    error_message = "private_subnet_ids must look like subnet-0123abcd."
  }
}

variable "public_subnet_ids" {
  description = "Public subnets of the existing VPC for an internet-facing load balancer; used only when vpc_id is set."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for s in var.public_subnet_ids : can(regex("^subnet-[0-9a-f]+$", s))])
    error_message = "public_subnet_ids must look like subnet-0123abcd."
  }
}

variable "cidr_block" {
  description = "CIDR block of the VPC created when vpc_id is null."
  type        = string
  default     = "10.40.0.0/16"

  validation {
    condition     = can(cidrnetmask(var.cidr_block)) && tonumber(split("/", var.cidr_block)[1]) <= 20
    error_message = "cidr_block must be an IPv4 CIDR block of /20 or larger."
  }
}

variable "availability_zones" {
  description = "Availability zones of the subnets created when vpc_id is null (two or three: the NATS cluster and the ingest nodes spread over them)."
  type        = list(string)
  default     = []

  validation {
    condition     = length(var.availability_zones) == 0 || (length(var.availability_zones) >= 2 && length(var.availability_zones) <= 6)
    error_message = "availability_zones must be empty (the first three of the region) or list 2 to 6 zones."
  }
}

variable "cql_allowed_cidrs" {
  description = "IPv4 CIDR blocks allowed to reach the CQL port 9042 of the load balancer."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.cql_allowed_cidrs : can(cidrnetmask(c)) && c != "0.0.0.0/0"])
    error_message = "cql_allowed_cidrs must be IPv4 CIDR blocks; open the port to everyone with cql_open_to_internet instead."
  }
}

variable "cql_open_to_internet" {
  description = "Allow anyone (0.0.0.0/0) to reach the load balancer's CQL port 9042. Off by default: turn it on only with -cql.authenticator=password and TLS."
  type        = bool
  default     = false
}

variable "rpc_port" {
  description = "Port of the ingest nodes' RPC (-ingest.rpc-address)."
  type        = number
  default     = 9190

  validation {
    condition     = var.rpc_port > 1024 && var.rpc_port < 65536
    error_message = "rpc_port must be between 1025 and 65535."
  }
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

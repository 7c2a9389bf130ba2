# A complete Sediment cluster on AWS: the bucket, a VPC (or yours), a NATS
# JetStream cluster of three, ingest nodes with their commitlog volumes,
# frontends behind a network load balancer on 9042, and compactors that
# scale on the compaction backlog.

provider "aws" {
  region = var.region

  default_tags {
    tags = merge(var.tags, { "sediment:cluster" = var.name })
  }
}

data "aws_ssm_parameter" "al2023" {
  count = var.ami_id == null ? 1 : 0
  name  = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-${var.architecture}"
}

locals {
  ami_id    = var.ami_id != null ? var.ami_id : nonsensitive(data.aws_ssm_parameter.al2023[0].value)
  nats_arch = var.architecture == "arm64" ? "arm64" : "amd64"
  family    = var.architecture == "arm64" ? "g" : "i"

  # Flags every Sediment role shares. The NATS URL comes from the servers'
  # network interfaces, so no instance of an Auto Scaling group starts
  # before the servers' addresses are reserved.
  flags = {
    "objectstore.backend"   = "s3"
    "objectstore.bucket"    = module.bucket.name
    "objectstore.region"    = var.region
    "objectstore.prefix"    = var.bucket_prefix
    "manifest.nats-url"     = module.nats.url
    "manifest.cluster-name" = var.name
    "log.format"            = "json"
  }
}

module "bucket" {
  source      = "../../modules/bucket"
  name        = var.bucket_name
  kms_key_arn = var.kms_key_arn
  tags        = var.tags
}

module "network" {
  source               = "../../modules/network"
  name                 = var.name
  vpc_id               = var.vpc_id
  private_subnet_ids   = var.private_subnet_ids
  public_subnet_ids    = var.public_subnet_ids
  cql_allowed_cidrs    = var.cql_allowed_cidrs
  cql_open_to_internet = var.cql_open_to_internet
  tags                 = var.tags
}

module "iam" {
  source      = "../../modules/iam"
  name        = var.name
  bucket_arn  = module.bucket.arn
  prefix      = var.bucket_prefix
  kms_key_arn = var.kms_key_arn
  tags        = var.tags
}

module "nats" {
  source            = "../../modules/nats"
  name              = var.name
  subnets           = module.network.private_subnets
  security_group_id = module.network.security_group_ids["nats"]
  ami_id            = local.ami_id
  instance_type     = "m7${local.family}.large"
  nats_server_url   = "https://github.com/nats-io/nats-server/releases/download/v${var.nats_version}/nats-server-v${var.nats_version}-linux-${local.nats_arch}.tar.gz"
  kms_key_arn       = var.kms_key_arn
  tags              = var.tags
}

module "ingest" {
  source                 = "../../modules/ingest"
  name                   = var.name
  node_count             = var.ingest_nodes
  subnets                = module.network.private_subnets
  security_group_id      = module.network.security_group_ids["ingest"]
  iam_role_name          = module.iam.role_names["ingest"]
  instance_profile_name  = module.iam.instance_profile_names["ingest"]
  ami_id                 = local.ami_id
  instance_type          = "m7${local.family}.xlarge"
  kms_key_arn            = var.kms_key_arn
  sediment_binary_url    = var.sediment_binary_url
  sediment_binary_sha256 = var.sediment_binary_sha256
  flags                  = local.flags
  tags                   = var.tags
}

module "frontend" {
  source                 = "../../modules/frontend"
  name                   = var.name
  subnets                = module.network.private_subnets
  security_group_id      = module.network.security_group_ids["frontend"]
  lb_security_group_id   = module.network.security_group_ids["lb"]
  lb_subnet_ids          = var.cql_internet_facing ? module.network.public_subnet_ids : [for s in module.network.private_subnets : s.id]
  internal               = !var.cql_internet_facing
  instance_profile_name  = module.iam.instance_profile_names["frontend"]
  ami_id                 = local.ami_id
  instance_type          = "c7${local.family}.xlarge"
  min_size               = var.frontend_min
  max_size               = var.frontend_max
  kms_key_arn            = var.kms_key_arn
  sediment_binary_url    = var.sediment_binary_url
  sediment_binary_sha256 = var.sediment_binary_sha256
  flags                  = local.flags
  tags                   = var.tags
}

module "compactor" {
  source                 = "../../modules/compactor"
  name                   = var.name
  subnets                = module.network.private_subnets
  security_group_id      = module.network.security_group_ids["compactor"]
  iam_role_name          = module.iam.role_names["compactor"]
  instance_profile_name  = module.iam.instance_profile_names["compactor"]
  ami_id                 = local.ami_id
  instance_type          = "m7${local.family}.xlarge"
  min_size               = var.compactor_min
  max_size               = var.compactor_max
  kms_key_arn            = var.kms_key_arn
  sediment_binary_url    = var.sediment_binary_url
  sediment_binary_sha256 = var.sediment_binary_sha256
  flags                  = local.flags
  tags                   = var.tags
}

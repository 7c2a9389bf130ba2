# The VPC (given or created), its private subnets, and the security groups
# of the Sediment roles. Only the load balancer's CQL port is reachable from
# outside the VPC, and only from the allowed CIDR blocks unless
# cql_open_to_internet says otherwise.

data "aws_availability_zones" "available" {
  count = local.create ? 1 : 0
  state = "available"
}

data "aws_region" "current" {}

locals {
  create = var.vpc_id == null
  azs    = local.create ? (length(var.availability_zones) > 0 ? var.availability_zones : slice(data.aws_availability_zones.available[0].names, 0, 3)) : []
  tags   = merge(var.tags, { "sediment:cluster" = var.name })

  vpc_id         = local.create ? aws_vpc.this[0].id : var.vpc_id
  vpc_cidr_block = local.create ? aws_vpc.this[0].cidr_block : data.aws_vpc.given[0].cidr_block

  private_subnets = local.create ? [
    for s in aws_subnet.private : { id = s.id, availability_zone = s.availability_zone, cidr_block = s.cidr_block }
    ] : [
    for id in var.private_subnet_ids : {
      id                = data.aws_subnet.given[id].id
      availability_zone = data.aws_subnet.given[id].availability_zone
      cidr_block        = data.aws_subnet.given[id].cidr_block
    }
  ]
  public_subnet_ids = local.create ? aws_subnet.public[*].id : var.public_subnet_ids
}

# An existing VPC.

data "aws_vpc" "given" {
  count = local.create ? 0 : 1
  id    = var.vpc_id

  lifecycle {
    postcondition {
      condition     = length(var.private_subnet_ids) > 0
      error_message = "private_subnet_ids must list the private subnets of the given VPC."
    }
  }
}

data "aws_subnet" "given" {
  for_each = local.create ? toset([]) : toset(var.private_subnet_ids)
  id       = each.value
}

# A created VPC: a private and a public subnet per zone, one NAT gateway for
# the downloads of the binaries, and an S3 gateway endpoint so that the
# bucket traffic, nearly all of it, bypasses the NAT gateway and its
# per-gigabyte charge.

resource "aws_vpc" "this" {
  count                = local.create ? 1 : 0
  cidr_block           = var.cidr_block
  enable_dns_support   = true
  enable_dns_hostnames = true
  tags                 = merge(local.tags, { Name = var.name })
}

resource "aws_subnet" "private" {
  count             = length(local.azs)
  vpc_id            = aws_vpc.this[0].id
  availability_zone = local.azs[count.index]
  cidr_block        = cidrsubnet(var.cidr_block, 4, count.index)
  tags              = merge(local.tags, { Name = "${var.name}-private-${local.azs[count.index]}" })
}

resource "aws_subnet" "public" {
  count             = length(local.azs)
  vpc_id            = aws_vpc.this[0].id
  availability_zone = local.azs[count.index]
  cidr_block        = cidrsubnet(var.cidr_block, 4, 8 + count.index)
  tags              = merge(local.tags, { Name = "${var.name}-public-${local.azs[count.index]}" })
}

resource "aws_internet_gateway" "this" {
  count  = local.create ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(local.tags, { Name = var.name })
}

resource "aws_eip" "nat" {
  count  = local.create ? 1 : 0
  domain = "vpc"
  tags   = merge(local.tags, { Name = "${var.name}-nat" })
}

resource "aws_nat_gateway" "this" {
  count         = local.create ? 1 : 0
  allocation_id = aws_eip.nat[0].id
  subnet_id     = aws_subnet.public[0].id
  tags          = merge(local.tags, { Name = var.name })
  depends_on    = [aws_internet_gateway.this]
}

resource "aws_route_table" "public" {
  count  = local.create ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(local.tags, { Name = "${var.name}-public" })

  route {
    cidr_block = "0.0.0.0/0"
    gateway_id = aws_internet_gateway.this[0].id
  }
}

resource "aws_route_table" "private" {
  count  = local.create ? 1 : 0
  vpc_id = aws_vpc.this[0].id
  tags   = merge(local.tags, { Name = "${var.name}-private" })

  route {
    cidr_block     = "0.0.0.0/0"
    nat_gateway_id = aws_nat_gateway.this[0].id
  }
}

resource "aws_route_table_association" "public" {
  count          = length(aws_subnet.public)
  subnet_id      = aws_subnet.public[count.index].id
  route_table_id = aws_route_table.public[0].id
}

resource "aws_route_table_association" "private" {
  count          = length(aws_subnet.private)
  subnet_id      = aws_subnet.private[count.index].id
  route_table_id = aws_route_table.private[0].id
}

resource "aws_vpc_endpoint" "s3" {
  count             = local.create ? 1 : 0
  vpc_id            = aws_vpc.this[0].id
  service_name      = "com.amazonaws.${data.aws_region.current.name}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = [aws_route_table.private[0].id]
  tags              = merge(local.tags, { Name = "${var.name}-s3" })
}

# Security groups. Every role may reach anything outbound (the bucket, NATS,
# the binaries' URLs); inbound is per port and source.

resource "aws_security_group" "this" {
  for_each    = toset(["lb", "frontend", "ingest", "compactor", "nats"])
  name        = "${var.name}-${each.key}"
  description = "Sediment ${each.key} of ${var.name}"
  vpc_id      = local.vpc_id
  tags        = merge(local.tags, { Name = "${var.name}-${each.key}" })
}

resource "aws_vpc_security_group_egress_rule" "all" {
  for_each          = aws_security_group.this
  security_group_id = each.value.id
  description       = "Any outbound traffic"
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
}

# The only ingress from outside the VPC: CQL on the load balancer.
resource "aws_vpc_security_group_ingress_rule" "lb_cql" {
  for_each          = toset(var.cql_open_to_internet ? ["0.0.0.0/0"] : var.cql_allowed_cidrs)
  security_group_id = aws_security_group.this["lb"].id
  description       = "CQL from ${each.value}"
  ip_protocol       = "tcp"
  from_port         = 9042
  to_port           = 9042
  cidr_ipv4         = each.value
}

resource "aws_vpc_security_group_ingress_rule" "frontend_cql" {
  security_group_id            = aws_security_group.this["frontend"].id
  description                  = "CQL from the load balancer"
  ip_protocol                  = "tcp"
  from_port                    = 9042
  to_port                      = 9042
  referenced_security_group_id = aws_security_group.this["lb"].id
}

resource "aws_vpc_security_group_ingress_rule" "frontend_health" {
  security_group_id            = aws_security_group.this["frontend"].id
  description                  = "Health checks of the load balancer"
  ip_protocol                  = "tcp"
  from_port                    = 9180
  to_port                      = 9180
  referenced_security_group_id = aws_security_group.this["lb"].id
}

# /metrics, /healthz and /ready of every role, for scrapers in the VPC.
resource "aws_vpc_security_group_ingress_rule" "http" {
  for_each          = toset(["frontend", "ingest", "compactor"])
  security_group_id = aws_security_group.this[each.key].id
  description       = "Metrics and health from the VPC"
  ip_protocol       = "tcp"
  from_port         = 9180
  to_port           = 9180
  cidr_ipv4         = local.vpc_cidr_block
}

resource "aws_vpc_security_group_ingress_rule" "ingest_rpc" {
  security_group_id = aws_security_group.this["ingest"].id
  description       = "Ingest RPC from the VPC"
  ip_protocol       = "tcp"
  from_port         = var.rpc_port
  to_port           = var.rpc_port
  cidr_ipv4         = local.vpc_cidr_block
}

resource "aws_vpc_security_group_ingress_rule" "nats_client" {
  security_group_id = aws_security_group.this["nats"].id
  description       = "NATS clients from the VPC"
  ip_protocol       = "tcp"
  from_port         = 4222
  to_port           = 4222
  cidr_ipv4         = local.vpc_cidr_block
}

resource "aws_vpc_security_group_ingress_rule" "nats_monitor" {
  security_group_id = aws_security_group.this["nats"].id
  description       = "NATS monitoring from the VPC"
  ip_protocol       = "tcp"
  from_port         = 8222
  to_port           = 8222
  cidr_ipv4         = local.vpc_cidr_block
}

resource "aws_vpc_security_group_ingress_rule" "nats_routes" {
  security_group_id            = aws_security_group.this["nats"].id
  description                  = "NATS cluster routes between the NATS servers"
  ip_protocol                  = "tcp"
  from_port                    = 6222
  to_port                      = 6222
  referenced_security_group_id = aws_security_group.this["nats"].id
}

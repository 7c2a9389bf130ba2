locals {
  open = true
}

resource "aws_vpc_security_group_ingress_rule" "cql" {
  security_group_id = "sg-1"
  ip_protocol       = "tcp"
  from_port         = 9042
  to_port           = 9042
  cidr_ipv4         = local.open ? "0.0.0.0/0" : "10.0.0.0/8"
}

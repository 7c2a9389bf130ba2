resource "aws_vpc_security_group_ingress_rule" "cql" {
  security_group_id = "sg-1"
  ip_protocol       = "tcp"
  from_port         = 9042
  to_port           = 9042
  cidr_ipv4         = "0.0.0.0/0"
}

variable "open" {
  description = "Open CQL to the internet."
  type        = bool
  default     = false
}

resource "aws_security_group_rule" "cql" {
  type              = "ingress"
  security_group_id = "sg-1"
  protocol          = "tcp"
  from_port         = 9042
  to_port           = 9043
  ipv6_cidr_blocks  = var.open ? ["::/0"] : []
}

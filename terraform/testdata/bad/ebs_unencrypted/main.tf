resource "aws_ebs_volume" "a" {
  availability_zone = "us-east-1a"
  size              = 10
  encrypted         = false
}

resource "aws_ebs_volume" "b" {
  availability_zone = "us-east-1a"
  size              = 10
}

variable "encrypt" {
  description = "Whether to encrypt."
  type        = bool
}

resource "aws_ebs_volume" "c" {
  availability_zone = "us-east-1a"
  size              = 10
  encrypted         = true
}

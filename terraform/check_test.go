package terraform

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// A problem is one violation of the rules, at a place in a file.
type problem struct {
	rng hcl.Range
	msg string
}

func (p problem) String() string {
	return fmt.Sprintf("%s:%d: %s", p.rng.Filename, p.rng.Start.Line, p.msg)
}

// A module is the parsed .tf files of one directory.
type module struct {
	dir    string
	bodies []*hclsyntax.Body
}

// block returns the top-level blocks of type typ in m.
func (m *module) blocks(typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range m.bodies {
		for _, blk := range b.Blocks {
			if blk.Type == typ {
				out = append(out, blk)
			}
		}
	}
	return out
}

// resources returns the resource blocks of the given resource type.
func (m *module) resources(typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, blk := range m.blocks("resource") {
		if len(blk.Labels) == 2 && blk.Labels[0] == typ {
			out = append(out, blk)
		}
	}
	return out
}

// checker applies the rules to the modules under root.
type checker struct {
	root     string // directory that module sources must stay within
	problems []problem
}

func (c *checker) report(rng hcl.Range, format string, args ...any) {
	c.problems = append(c.problems, problem{rng: rng, msg: fmt.Sprintf(format, args...)})
}

// checkTree parses every .tf file under dir, skipping testdata directories
// other than dir itself, and returns the problems found, sorted.
func checkTree(root, dir string) ([]problem, error) {
	c := &checker{root: root}
	mods, err := loadModules(dir)
	if err != nil {
		return nil, err
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("no .tf files under %s", dir)
	}
	for _, m := range mods {
		c.checkModule(m)
	}
	sort.Slice(c.problems, func(i, j int) bool { return c.problems[i].String() < c.problems[j].String() })
	return c.problems, nil
}

// loadModules parses the .tf files under dir, one module per directory.
// A file that does not parse is an error, not a problem: nothing else can
// be said about it.
func loadModules(dir string) ([]*module, error) {
	p := hclparse.NewParser()
	byDir := map[string]*module{}
	var dirs []string
	err := filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name != dir && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(name) != ".tf" {
			return nil
		}
		f, diags := p.ParseHCLFile(name)
		if diags.HasErrors() {
			return fmt.Errorf("parse: %s", diags.Error())
		}
		d2 := filepath.Dir(name)
		m := byDir[d2]
		if m == nil {
			m = &module{dir: d2}
			byDir[d2] = m
			dirs = append(dirs, d2)
		}
		m.bodies = append(m.bodies, f.Body.(*hclsyntax.Body))
		return nil
	})
	if err != nil {
		return nil, err
	}
	mods := make([]*module, 0, len(dirs))
	for _, d := range dirs {
		mods = append(mods, byDir[d])
	}
	return mods, nil
}

func (c *checker) checkModule(m *module) {
	c.checkVariables(m)
	c.checkOutputs(m)
	c.checkSources(m)
	c.checkTemplates(m)
	c.checkEncryption(m)
	c.checkIngress(m)
	c.checkDelete(m)
}

// hasText reports whether body sets attribute name to something other than
// an empty string.
func hasText(body *hclsyntax.Body, name string) bool {
	a, ok := body.Attributes[name]
	if !ok {
		return false
	}
	if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		return strings.TrimSpace(v.AsString()) != ""
	}
	return true
}

func (c *checker) checkVariables(m *module) {
	for _, v := range m.blocks("variable") {
		name := strings.Join(v.Labels, ".")
		if _, ok := v.Body.Attributes["type"]; !ok {
			c.report(v.DefRange(), "variable %q has no type", name)
		}
		if !hasText(v.Body, "description") {
			c.report(v.DefRange(), "variable %q has no description", name)
		}
		if a, ok := v.Body.Attributes["default"]; ok {
			for _, lit := range openCIDRs(a.Expr) {
				c.report(lit.rng, "variable %q defaults to %s", name, lit.value)
			}
		}
	}
}

func (c *checker) checkOutputs(m *module) {
	for _, o := range m.blocks("output") {
		if !hasText(o.Body, "description") {
			c.report(o.DefRange(), "output %q has no description", strings.Join(o.Labels, "."))
		}
	}
}

// checkSources requires every module source to be a relative path to a
// directory of .tf files inside the checker's root.
func (c *checker) checkSources(m *module) {
	for _, b := range m.blocks("module") {
		a, ok := b.Body.Attributes["source"]
		if !ok {
			c.report(b.DefRange(), "module %q has no source", b.Labels[0])
			continue
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() || v.Type() != cty.String {
			c.report(a.SrcRange, "module %q: source must be a literal string", b.Labels[0])
			continue
		}
		src := v.AsString()
		if !strings.HasPrefix(src, "./") && !strings.HasPrefix(src, "../") {
			c.report(a.SrcRange, "module %q: source %q is not a path in this repository", b.Labels[0], src)
			continue
		}
		dir := filepath.Join(m.dir, filepath.FromSlash(src))
		rel, err := filepath.Rel(c.root, dir)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			c.report(a.SrcRange, "module %q: source %q leaves %s", b.Labels[0], src, c.root)
			continue
		}
		if tf, _ := filepath.Glob(filepath.Join(dir, "*.tf")); len(tf) == 0 {
			c.report(a.SrcRange, "module %q: source %q is not a directory of .tf files", b.Labels[0], src)
		}
	}
}

// checkTemplates finds the calls file("${path.module}/x") and
// templatefile("${path.module}/x", {...}) and requires the file to exist
// and, for templatefile, the template to parse and to use only the
// variables the call passes.
func (c *checker) checkTemplates(m *module) {
	for _, body := range m.bodies {
		hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
			call, ok := n.(*hclsyntax.FunctionCallExpr)
			if !ok || (call.Name != "file" && call.Name != "templatefile") || len(call.Args) == 0 {
				return nil
			}
			name, ok := modulePath(call.Args[0])
			if !ok {
				c.report(call.Args[0].Range(), "%s: the path must be \"${path.module}/<file>\"", call.Name)
				return nil
			}
			file := filepath.Join(m.dir, filepath.FromSlash(name))
			src, err := os.ReadFile(file)
			if err != nil {
				c.report(call.Args[0].Range(), "%s: %v", call.Name, err)
				return nil
			}
			if call.Name != "templatefile" {
				return nil
			}
			tmpl, diags := hclsyntax.ParseTemplate(src, file, hcl.InitialPos)
			if diags.HasErrors() {
				c.report(call.Args[0].Range(), "templatefile: %s", diags.Error())
				return nil
			}
			passed := map[string]bool{}
			if len(call.Args) > 1 {
				obj, ok := call.Args[1].(*hclsyntax.ObjectConsExpr)
				if !ok {
					return nil // not a literal object: cannot tell
				}
				for _, it := range obj.Items {
					if k := hcl.ExprAsKeyword(it.KeyExpr); k != "" {
						passed[k] = true
					} else if v, d := it.KeyExpr.Value(nil); !d.HasErrors() && v.Type() == cty.String {
						passed[v.AsString()] = true
					}
				}
			}
			for _, tr := range tmpl.Variables() {
				if root := tr.RootName(); !passed[root] {
					c.report(tr.SourceRange(), "template uses %q, which the templatefile call at %s:%d does not pass",
						root, call.Range().Filename, call.Range().Start.Line)
				}
			}
			return nil
		})
	}
}

// modulePath returns x from the expression "${path.module}/x".
func modulePath(e hclsyntax.Expression) (string, bool) {
	t, ok := e.(*hclsyntax.TemplateExpr)
	if !ok || len(t.Parts) != 2 {
		return "", false
	}
	ref, ok := t.Parts[0].(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(ref.Traversal) != 2 || ref.Traversal.RootName() != "path" {
		return "", false
	}
	if attr, ok := ref.Traversal[1].(hcl.TraverseAttr); !ok || attr.Name != "module" {
		return "", false
	}
	lit, ok := t.Parts[1].(*hclsyntax.LiteralValueExpr)
	if !ok || lit.Val.Type() != cty.String {
		return "", false
	}
	name, ok := strings.CutPrefix(lit.Val.AsString(), "/")
	if !ok || name == "" || path.Clean(name) != name || strings.HasPrefix(name, "..") {
		return "", false
	}
	return name, true
}

// isTrue reports whether body sets name to the literal true.
func isTrue(body *hclsyntax.Body, name string) bool {
	a, ok := body.Attributes[name]
	if !ok {
		return false
	}
	v, diags := a.Expr.Value(nil)
	return !diags.HasErrors() && v.Type() == cty.Bool && v.IsKnown() && !v.IsNull() && v.True()
}

// nested returns the blocks of type typ directly in body, including the
// content of dynamic blocks of that type.
func nested(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		switch {
		case b.Type == typ:
			out = append(out, b)
		case b.Type == "dynamic" && len(b.Labels) == 1 && b.Labels[0] == typ:
			for _, content := range b.Body.Blocks {
				if content.Type == "content" {
					out = append(out, content)
				}
			}
		}
	}
	return out
}

func (c *checker) checkEncryption(m *module) {
	// Buckets named by an encryption configuration's bucket attribute.
	encrypted := map[string]bool{}
	for _, sse := range m.resources("aws_s3_bucket_server_side_encryption_configuration") {
		a, ok := sse.Body.Attributes["bucket"]
		if !ok {
			continue
		}
		rules := nested(sse.Body, "rule")
		if len(rules) == 0 {
			c.report(sse.DefRange(), "%s has no rule", strings.Join(sse.Labels, "."))
			continue
		}
		for _, r := range rules {
			def := nested(r.Body, "apply_server_side_encryption_by_default")
			if len(def) == 0 || !hasText(def[0].Body, "sse_algorithm") {
				c.report(r.DefRange(), "%s: rule sets no sse_algorithm", strings.Join(sse.Labels, "."))
			}
		}
		for _, tr := range a.Expr.Variables() {
			if tr.RootName() == "aws_s3_bucket" && len(tr) > 1 {
				if attr, ok := tr[1].(hcl.TraverseAttr); ok {
					encrypted[attr.Name] = true
				}
			}
		}
	}
	for _, b := range m.resources("aws_s3_bucket") {
		if !encrypted[b.Labels[1]] {
			c.report(b.DefRange(), "aws_s3_bucket.%s has no aws_s3_bucket_server_side_encryption_configuration", b.Labels[1])
		}
	}
	for _, v := range m.resources("aws_ebs_volume") {
		if !isTrue(v.Body, "encrypted") {
			c.report(v.DefRange(), "aws_ebs_volume.%s is not encrypted = true", v.Labels[1])
		}
	}
	for _, in := range m.resources("aws_instance") {
		roots := nested(in.Body, "root_block_device")
		if len(roots) == 0 {
			c.report(in.DefRange(), "aws_instance.%s has no root_block_device with encrypted = true", in.Labels[1])
		}
		for _, d := range append(roots, nested(in.Body, "ebs_block_device")...) {
			if !isTrue(d.Body, "encrypted") {
				c.report(d.DefRange(), "aws_instance.%s: %s is not encrypted = true", in.Labels[1], d.Type)
			}
		}
	}
	for _, lt := range m.resources("aws_launch_template") {
		maps := nested(lt.Body, "block_device_mappings")
		if len(maps) == 0 {
			c.report(lt.DefRange(), "aws_launch_template.%s has no block_device_mappings with encrypted = true", lt.Labels[1])
		}
		for _, bdm := range maps {
			ebs := nested(bdm.Body, "ebs")
			if len(ebs) == 0 || !isTrue(ebs[0].Body, "encrypted") {
				c.report(bdm.DefRange(), "aws_launch_template.%s: block device is not encrypted = true", lt.Labels[1])
			}
		}
	}
}

// A literal is a string literal found in an expression.
type literal struct {
	value string
	rng   hcl.Range
	// gated: the literal is a result of a conditional whose condition
	// refers to an input variable.
	gated bool
}

// literals returns the string literals in n that keep returns true for.
func literals(n hclsyntax.Node, keep func(string) bool) []literal {
	w := &literalWalker{keep: keep}
	hclsyntax.Walk(n, w)
	return w.found
}

type literalWalker struct {
	keep  func(string) bool
	stack []hclsyntax.Node
	found []literal
}

func (w *literalWalker) Enter(n hclsyntax.Node) hcl.Diagnostics {
	if lit, ok := n.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String && lit.Val.IsKnown() && !lit.Val.IsNull() {
		if s := lit.Val.AsString(); w.keep(s) {
			w.found = append(w.found, literal{value: s, rng: lit.SrcRange, gated: w.gated()})
		}
	}
	w.stack = append(w.stack, n)
	return nil
}

func (w *literalWalker) Exit(hclsyntax.Node) hcl.Diagnostics {
	w.stack = w.stack[:len(w.stack)-1]
	return nil
}

// gated reports whether the node being entered lies in a result branch of
// a conditional whose condition refers to var.
func (w *literalWalker) gated() bool {
	for i := len(w.stack) - 1; i >= 0; i-- {
		cond, ok := w.stack[i].(*hclsyntax.ConditionalExpr)
		if !ok {
			continue
		}
		var child hclsyntax.Node
		if i+1 < len(w.stack) {
			child = w.stack[i+1]
		}
		if child == hclsyntax.Node(cond.Condition) {
			continue
		}
		for _, tr := range cond.Condition.Variables() {
			if tr.RootName() == "var" {
				return true
			}
		}
	}
	return false
}

func isOpenCIDR(s string) bool { return s == "0.0.0.0/0" || s == "::/0" }

func openCIDRs(n hclsyntax.Node) []literal { return literals(n, isOpenCIDR) }

// checkIngress finds the ingress rules of all three forms and rejects any
// that admits the whole internet, unless it is port 9042 alone, opened by
// a conditional on a variable.
func (c *checker) checkIngress(m *module) {
	type rule struct {
		name string
		body *hclsyntax.Body
	}
	var rules []rule
	for _, sg := range m.resources("aws_security_group") {
		for _, in := range nested(sg.Body, "ingress") {
			rules = append(rules, rule{"aws_security_group." + sg.Labels[1] + " ingress", in.Body})
		}
	}
	for _, r := range m.resources("aws_security_group_rule") {
		typ, diags := attrString(r.Body, "type")
		if diags || typ != "egress" {
			rules = append(rules, rule{"aws_security_group_rule." + r.Labels[1], r.Body})
		}
	}
	for _, r := range m.resources("aws_vpc_security_group_ingress_rule") {
		rules = append(rules, rule{"aws_vpc_security_group_ingress_rule." + r.Labels[1], r.Body})
	}
	for _, r := range rules {
		open := openCIDRs(r.body)
		if len(open) == 0 {
			continue
		}
		from, okf := attrNumber(r.body, "from_port")
		to, okt := attrNumber(r.body, "to_port")
		cql := okf && okt && from == 9042 && to == 9042
		for _, lit := range open {
			switch {
			case !cql:
				c.report(lit.rng, "%s admits %s to a port other than 9042 alone", r.name, lit.value)
			case !lit.gated:
				c.report(lit.rng, "%s admits %s to 9042 without a variable to ask for it", r.name, lit.value)
			}
		}
	}
}

// attrString returns body's attribute name as a literal string; bad is
// true if it is missing or not a literal.
func attrString(body *hclsyntax.Body, name string) (s string, bad bool) {
	a, ok := body.Attributes[name]
	if !ok {
		return "", true
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String || v.IsNull() {
		return "", true
	}
	return v.AsString(), false
}

// attrNumber returns body's attribute name as a literal whole number.
func attrNumber(body *hclsyntax.Body, name string) (int64, bool) {
	a, ok := body.Attributes[name]
	if !ok {
		return 0, false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.Number || v.IsNull() {
		return 0, false
	}
	n, acc := v.AsBigFloat().Int64()
	return n, acc == 0
}

// grantsDelete reports whether the IAM action (pattern) s covers
// s3:DeleteObject.
func grantsDelete(s string) bool {
	ok, err := path.Match(strings.ToLower(s), "s3:deleteobject")
	return err == nil && ok
}

// mentionsDelete reports whether a string outside an IAM statement block,
// such as a JSON policy, names s3:DeleteObject or an S3 wildcard.
func mentionsDelete(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "s3:deleteobject") || strings.Contains(s, "s3:*") || strings.Contains(s, "s3:delete*")
}

// checkDelete allows grants of s3:DeleteObject only in blocks whose name
// contains "compactor". Deny statements are not grants. An Allow with
// not_actions grants everything it does not list, so it is refused too.
func (c *checker) checkDelete(m *module) {
	for _, body := range m.bodies {
		for _, top := range body.Blocks {
			if slices.ContainsFunc(top.Labels, func(l string) bool { return strings.Contains(l, "compactor") }) {
				continue
			}
			name := strings.Join(append([]string{top.Type}, top.Labels...), ".")
			statements := map[*hclsyntax.Body]bool{}
			for _, st := range statementBlocks(top.Body) {
				statements[st] = true
				if effect, bad := attrString(st, "effect"); !bad && effect == "Deny" {
					continue
				}
				if a, ok := st.Attributes["not_actions"]; ok {
					c.report(a.SrcRange, "%s: an Allow statement with not_actions can grant s3:DeleteObject", name)
				}
				if a, ok := st.Attributes["actions"]; ok {
					for _, lit := range literals(a.Expr, grantsDelete) {
						c.report(lit.rng, "%s grants %s; only compactors delete", name, lit.value)
					}
				}
			}
			c.checkDeleteOutside(top.Body, statements, name)
		}
	}
}

// checkDeleteOutside looks for delete grants in string literals of body
// that are not within a statement block.
func (c *checker) checkDeleteOutside(body *hclsyntax.Body, statements map[*hclsyntax.Body]bool, name string) {
	for _, a := range body.Attributes {
		for _, lit := range literals(a.Expr, mentionsDelete) {
			c.report(lit.rng, "%s names %q; only compactors delete", name, lit.value)
		}
	}
	for _, b := range body.Blocks {
		if !statements[b.Body] {
			c.checkDeleteOutside(b.Body, statements, name)
		}
	}
}

// statementBlocks returns the bodies of the IAM statement blocks in body at
// any depth, the content of dynamic "statement" blocks included.
func statementBlocks(body *hclsyntax.Body) []*hclsyntax.Body {
	var out []*hclsyntax.Body
	for _, b := range body.Blocks {
		switch {
		case b.Type == "statement":
			out = append(out, b.Body)
		case b.Type == "dynamic" && len(b.Labels) == 1 && b.Labels[0] == "statement":
			for _, content := range nested(b.Body, "content") {
				out = append(out, content.Body)
			}
		default:
			out = append(out, statementBlocks(b.Body)...)
		}
	}
	return out
}

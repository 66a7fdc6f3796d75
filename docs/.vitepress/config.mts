import { defineConfig } from 'vitepress';
import { slug } from './slug.js';

// The site is built from docs/ alone, offline: local search (an index built with the pages, no
// service to call), no fonts or scripts from elsewhere. Headings get GitHub's anchors, so the
// links between pages work the same on GitHub and on the site.
export default defineConfig({
  title: 'mcp-warden',
  description: 'An MCP gateway: one server for your host in front of all your MCP servers.',
  lang: 'en',
  lastUpdated: false,
  markdown: {
    anchor: { slugify: slug },
    headers: { level: [2, 3] },
  },
  // Pages link to files beside docs/ (the README, the source, the shipped policies and
  // examples), which the site does not hold; test/unit/docs.test.ts checks every relative link
  // and anchor against the repository instead.
  ignoreDeadLinks: [/^\.\/(?:\.\.\/)+(?:README|CHANGELOG|src|bench|policies|examples|deploy|schema)\b/],
  themeConfig: {
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    nav: [
      { text: 'Guides', link: '/guides/install' },
      { text: 'Reference', link: '/reference/configuration' },
    ],
    sidebar: [
      {
        text: 'Guides',
        items: [
          { text: 'Install and set up', link: '/guides/install' },
          { text: 'Desktop hosts', link: '/guides/desktop-hosts' },
          { text: 'Team mode', link: '/guides/team-mode' },
          { text: 'Signing in to remote servers', link: '/guides/signing-in-to-remote-servers' },
          { text: 'Large catalogues and tool search', link: '/guides/large-catalogues' },
          { text: 'Result guardrails', link: '/guides/result-guardrails' },
          { text: 'For administrators', link: '/guides/administrators' },
          { text: 'Managed settings: what they enforce', link: '/guides/managed-settings-enforcement' },
          { text: 'Troubleshooting', link: '/guides/troubleshooting' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'Configuration', link: '/reference/configuration' },
          { text: "A host's config file", link: '/reference/host-config-files' },
          { text: 'Command line', link: '/reference/cli' },
          { text: 'Secrets and the credential store', link: '/reference/secrets' },
          { text: 'How it behaves', link: '/reference/how-it-behaves' },
          { text: 'Policy and confirmation', link: '/reference/policy' },
          { text: 'Input validation', link: '/reference/validation' },
          { text: 'Audit records', link: '/reference/audit-records' },
          { text: 'Audit report, shipping, checkpoints', link: '/reference/audit-shipping' },
          { text: 'Protocol eras', link: '/reference/protocol-eras' },
          { text: 'Tasks', link: '/reference/tasks' },
          { text: 'How tool search ranks', link: '/reference/tool-search-ranking' },
          { text: 'MCP Apps', link: '/reference/mcp-apps' },
          { text: 'Telemetry', link: '/reference/telemetry' },
          { text: 'Upstream processes', link: '/reference/processes' },
          { text: 'Dependencies we wrote ourselves', link: '/reference/dependencies' },
        ],
      },
      {
        text: 'For contributors',
        items: [
          { text: 'How mcp-warden is built', link: '/architecture' },
          { text: 'Development', link: '/development' },
        ],
      },
    ],
  },
});

import type { Messages } from "../messages.js"

/** Chinese (Simplified). */
const messages: Messages = {
  tabPost: "我要反馈",
  tabUpdates: "最新动态",
  tabs: "反馈",
  formTitle: "告诉我们您的需求",
  board: "版块",
  loadingBoards: "正在加载版块…",
  noBoards: "暂无公开版块。",
  boardsFailed: "无法加载版块。",
  retry: "重试",
  title: "标题",
  details: "详细信息（可选）",
  submit: "提交反馈",
  sending: "正在提交…",
  similar: { other: "已有 {count} 条类似的反馈" },
  newTab: "（在新标签页中打开）",
  thanks: "谢谢！您的反馈“{title}”已发布。",
  sendMore: "继续提交反馈",
  pickBoard: "请选择一个版块。",
  titleRequired: "请为您的反馈填写标题。",
  fieldInvalid: "请检查此项。",
  loading: "正在加载…",
  nothingNew: "暂无新动态。",
  updatesFailed: "无法加载最新动态。",
  unreachable: "无法从此页面连接到反馈服务。",
  busy: { other: "反馈服务繁忙，请在 {seconds} 秒后重试。" },
  unauthorized: "无法验证您的登录信息。请刷新页面后重试。",
  notFound: "此版块已不存在。请刷新页面并选择其他版块。",
  checkForm: "请检查表单内容。",
  failed: "我们这边出了点问题，请重试。"
}
export default messages
